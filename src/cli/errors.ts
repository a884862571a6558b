// How the svc command line reports a failure, whatever its kind: one line on stderr and a non-zero
// exit. As text, `svc: <message>`; with --json, one JSON document on that line, the contract's error
// body { "error": { "code", "message", "details"? } }, so that a script reads errors the way it reads
// results. The exit code does not depend on the format: 2 for a command line the parser refuses
// (code usage_error; 1 for a flag given without its value), 1 for everything else. Codes: the service's own (validation_failed with
// details.fields, not_found, conflicts, ...), and for what only the command line meets:
// usage_error, invalid_configuration (a flag or SVC_* setting out of range), unsupported_schema_version
// (a database this version may not touch), audit_chain_broken, shutdown_failed, interrupted (a second
// stop signal), internal_error (anything unexpected; its message is kept: the operator is on the
// machine).
import { AppError, type ErrorCode } from '../kernel/errors.ts';
import { ConfigError } from '../kernel/config.ts';
import { SchemaVersionError } from '../db/migrate.ts';

export interface CliErrorBody { error: { code: ErrorCode; message: string; details?: Record<string, unknown> } }

/** A failure that only the command line reports (no HTTP status): a code, a message, optional details. */
export class CliError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  readonly exitCode: number;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, exitCode = 1) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.details = details;
    this.exitCode = exitCode;
  }
}

/** The fields a yargs refusal names (English messages; another locale leaves them out), for details.fields. */
function usageFields(message: string): Record<string, string> | undefined {
  const rules: [RegExp, string][] = [
    [/^Missing required arguments?: (.+)$/, 'is required'],
    [/^Unknown arguments?: (.+)$/, 'is not an option of this command'],
    [/^Not enough arguments following: (.+)$/, 'needs a value'],
  ];
  for (const [re, reason] of rules) {
    const m = re.exec(message);
    if (m) return Object.fromEntries(m[1].split(/,\s*/).map((name) => [name, reason]));
  }
  return undefined;
}

/**
 * A command line the parser refuses (unknown or missing flags and commands). Exit 2, except for what
 * yargs raises as an exception (a flag without its value: 1, as it always was).
 */
export function usageError(message: string, exitCode = 2): CliError {
  const fields = usageFields(message);
  return new CliError('usage_error', message, { ...(fields ? { fields } : {}), help: 'svc --help, or svc <command> --help' }, exitCode);
}

/** Any thrown value as the error body and the exit code it ends the command with. */
export function failureOf(err: unknown): { body: CliErrorBody; exitCode: number; text: string } {
  const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
  let code: ErrorCode = 'internal_error';
  let message = err instanceof Error ? err.message : String(err);
  let details: Record<string, unknown> | undefined;
  let exitCode = 1;
  let text = message;
  if (err instanceof AppError) {
    ({ code, details } = err);
    const fields = (details?.fields ?? null) as Record<string, string> | null;
    if (fields) text = Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ');
  } else if (err instanceof CliError) {
    ({ code, details, exitCode } = err);
  } else if (err instanceof ConfigError) {
    code = 'invalid_configuration';
  } else if (err instanceof SchemaVersionError) {
    code = 'unsupported_schema_version';
  }
  message = oneLine(message);
  return { body: { error: { code, message, ...(details ? { details } : {}) } }, exitCode, text: oneLine(text) };
}

/**
 * Whether the command line asks for JSON (--json, --json=true, --json true; the last one counts,
 * --no-json and =false turn it off; nothing after `--`). Read from argv itself, so that even a
 * command line the parser refuses answers in the format asked for.
 */
export function wantsJson(argv: readonly string[]): boolean {
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') break;
    if (a === '--json') {
      const next = argv[i + 1];
      json = next !== 'false';
      if (next === 'true' || next === 'false') i++;
    } else if (a === '--no-json') json = false;
    else if (a.startsWith('--json=')) json = a.slice('--json='.length) !== 'false';
  }
  return json;
}

let jsonErrors = false;

/** Set once by main() from the command line: later failures are written as JSON. */
export function reportErrorsAsJson(json: boolean): void {
  jsonErrors = json;
}

/** Writes the failure as one stderr line (JSON with --json) and exits with its code. */
export function exitWithError(err: unknown): never {
  const { body, exitCode, text } = failureOf(err);
  process.stderr.write(jsonErrors ? JSON.stringify(body) + '\n' : `svc: ${text}\n`);
  process.exit(exitCode);
}
