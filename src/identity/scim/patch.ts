// SCIM PATCH (RFC 7644 section 3.5.2) on a User: add, replace and remove, with op names in any
// case ("Replace" from Microsoft Entra ID), paths such as `active`, `name.givenName`,
// `emails[type eq "work"].value` or `urn:...:core:2.0:User:displayName`, and a replace without a
// path whose value is an object of attributes (Okta's deactivation). Paths of attributes the
// service does not keep (extensions, title, phoneNumbers, ...) are accepted and ignored.
import { invalidPath, invalidSyntax, invalidValue, mutability, noTarget } from './errors.ts';
import { parseComparison, stripCoreUrn, type Comparison } from './filter.ts';
import {
  LIMITS, asBoolean, asEmail, asEmails, asText, asUserName, field, isObject, onePrimary, type Json, type ScimEmail, type ScimUserState,
} from './resource.ts';

type Op = 'add' | 'replace' | 'remove';
interface Path { attr: string; filter: Comparison | null; sub: string | null }

const MAX_OPERATIONS = 100;
const READ_ONLY = new Set(['id', 'meta', 'schemas']);

/** The state after every operation, or a SCIM error (nothing is applied then). */
export function applyPatch(current: ScimUserState, body: unknown): ScimUserState {
  if (!isObject(body)) throw invalidSyntax('the body is a PatchOp object { schemas, Operations }');
  const ops = field(body, 'Operations');
  if (!Array.isArray(ops) || ops.length === 0) throw invalidSyntax('Operations is a non-empty array');
  if (ops.length > MAX_OPERATIONS) throw invalidSyntax(`at most ${MAX_OPERATIONS} operations`);
  const s: ScimUserState = { ...current, emails: current.emails.map((e) => ({ ...e })) };
  for (const raw of ops) applyOperation(s, raw);
  s.emails = onePrimary(s.emails);
  return s;
}

function applyOperation(s: ScimUserState, raw: unknown): void {
  if (!isObject(raw)) throw invalidSyntax('each operation is an object { op, path?, value? }');
  const opText = field(raw, 'op');
  const op = typeof opText === 'string' ? opText.toLowerCase() : '';
  if (op !== 'add' && op !== 'replace' && op !== 'remove') throw invalidSyntax('op is add, replace or remove');
  const pathText = field(raw, 'path');
  const value = field(raw, 'value');
  if (pathText === undefined || pathText === null || pathText === '') {
    if (op === 'remove') throw noTarget('remove needs a path');
    if (!isObject(value)) throw invalidValue('without a path, value is an object of attributes');
    for (const [key, v] of Object.entries(value)) {
      if (READ_ONLY.has(key.toLowerCase())) continue;
      const p = parsePath(key);
      if (p) set(s, op, p, v);
    }
    return;
  }
  if (typeof pathText !== 'string') throw invalidPath('path is a string');
  const p = parsePath(pathText);
  if (!p) return;
  if (op === 'remove') remove(s, p, value);
  else set(s, op, p, value);
}

/** `attr`, `attr.sub`, `attr[filter]` or `attr[filter].sub`; null for an extension's attribute (ignored). */
function parsePath(text: string): Path | null {
  const t = stripCoreUrn(text.trim());
  if (/^urn:/i.test(t)) return null;
  const m = /^([A-Za-z][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z][\w$-]*))?$/s.exec(t);
  if (!m) throw invalidPath(`invalid path ${text}`);
  let filter: Comparison | null = null;
  if (m[2] !== undefined) {
    try {
      filter = parseComparison(m[2]);
    } catch (err) {
      throw invalidPath(`invalid filter in path ${text}: ${(err as Error).message}`);
    }
    if (filter.op !== 'eq') throw invalidPath('a path filter compares with eq');
  }
  return { attr: m[1].toLowerCase(), filter, sub: m[3]?.toLowerCase() ?? null };
}

function plain(p: Path): void {
  if (p.filter || p.sub) throw invalidPath(`${p.attr} has no sub-attributes`);
}

function set(s: ScimUserState, op: Op, p: Path, v: unknown): void {
  switch (p.attr) {
    case 'username': plain(p); s.userName = asUserName(v); return;
    case 'externalid': plain(p); s.externalId = asText(v, 'externalId', LIMITS.externalId); return;
    case 'displayname': plain(p); s.displayName = asText(v, 'displayName'); return;
    case 'active': plain(p); s.active = asBoolean(v, 'active'); return;
    case 'name': setName(s, p, v); return;
    case 'emails': setEmails(s, op, p, v); return;
    default:
      if (READ_ONLY.has(p.attr)) throw mutability(`${p.attr} is read-only`);
  }
}

const NAME_SUBS: Record<string, 'givenName' | 'familyName' | 'formattedName'> = { givenname: 'givenName', familyname: 'familyName', formatted: 'formattedName' };

function setName(s: ScimUserState, p: Path, v: unknown): void {
  if (p.filter) throw invalidPath('name has no value filter');
  if (p.sub) {
    const key = NAME_SUBS[p.sub];
    if (key) s[key] = asText(v, `name.${p.sub}`);
    return;
  }
  if (v === null) { s.givenName = s.familyName = s.formattedName = null; return; }
  if (!isObject(v)) throw invalidValue('name is an object { givenName, familyName, formatted }');
  for (const [sub, key] of Object.entries(NAME_SUBS)) {
    const given = field(v, sub);
    if (given !== undefined) s[key] = asText(given, `name.${sub}`);
  }
}

function matches(e: ScimEmail, f: Comparison): boolean {
  const attr = f.path.toLowerCase();
  if (attr === 'type') return (e.type ?? '') === String(f.value ?? '').toLowerCase();
  if (attr === 'value') return e.value.toLowerCase() === String(f.value ?? '').toLowerCase();
  if (attr === 'primary') return e.primary === (f.value === true || String(f.value).toLowerCase() === 'true');
  throw invalidPath(`emails are filtered by type, value or primary, not ${f.path}`);
}

/** Sets one sub-attribute of an e-mail entry (a new primary takes the mark from the others). */
function setEmailSub(all: ScimEmail[], e: ScimEmail, sub: string, v: unknown): void {
  if (sub === 'value') e.value = asEmail({ value: v }).value;
  else if (sub === 'type') e.type = asText(v, 'emails.type', LIMITS.emailType)?.toLowerCase() ?? null;
  else if (sub === 'primary') {
    const primary = asBoolean(v, 'emails.primary');
    if (primary) for (const other of all) other.primary = false;
    e.primary = primary;
  }
}

function setEmails(s: ScimUserState, op: Op, p: Path, v: unknown): void {
  if (!p.filter && !p.sub) {
    const given = asEmails(v);
    if (op === 'replace') { s.emails = given; return; }
    for (const e of given) {
      const i = s.emails.findIndex((x) => x.value.toLowerCase() === e.value.toLowerCase());
      if (i >= 0) s.emails[i] = e;
      else s.emails.push(e);
    }
    if (s.emails.length > LIMITS.emails) throw invalidValue(`at most ${LIMITS.emails} emails`);
    return;
  }
  const targets = p.filter ? s.emails.filter((e) => matches(e, p.filter!)) : s.emails.filter((e) => e.primary).concat(s.emails).slice(0, 1);
  if (targets.length === 0) {
    // Nothing matches: the filter (type eq "work") and the value make a new entry.
    const implied: Json = p.filter ? { [p.filter.path]: p.filter.value } : {};
    const entry = p.sub ? { ...implied, [p.sub]: v } : isObject(v) ? { ...implied, ...v } : null;
    if (!entry) throw invalidValue('an e-mail entry is an object { value, type?, primary? }');
    const made = asEmail(entry);
    if (made.primary) for (const other of s.emails) other.primary = false;
    s.emails.push(made);
    if (s.emails.length > LIMITS.emails) throw invalidValue(`at most ${LIMITS.emails} emails`);
    return;
  }
  for (const e of targets) {
    if (p.sub) { setEmailSub(s.emails, e, p.sub, v); continue; }
    if (!isObject(v)) throw invalidValue('an e-mail entry is an object { value, type?, primary? }');
    for (const [k, x] of Object.entries(v)) setEmailSub(s.emails, e, k.toLowerCase(), x);
  }
}

function remove(s: ScimUserState, p: Path, v: unknown): void {
  switch (p.attr) {
    case 'username': throw mutability('userName is required and cannot be removed');
    case 'active': throw mutability('active cannot be removed; replace it with false');
    case 'externalid': plain(p); s.externalId = null; return;
    case 'displayname': plain(p); s.displayName = null; return;
    case 'name':
      if (p.filter) throw invalidPath('name has no value filter');
      if (p.sub) { const key = NAME_SUBS[p.sub]; if (key) s[key] = null; } else s.givenName = s.familyName = s.formattedName = null;
      return;
    case 'emails':
      if (!p.filter && !p.sub) {
        // remove with a value list removes those addresses; without, every address.
        const given = v === undefined || v === null ? null : asEmails(v).map((e) => e.value.toLowerCase());
        s.emails = given ? s.emails.filter((e) => !given.includes(e.value.toLowerCase())) : [];
        return;
      }
      if (!p.filter) throw invalidPath('remove of an e-mail sub-attribute needs a filter, e.g. emails[type eq "work"].value');
      if (!p.sub || p.sub === 'value') { s.emails = s.emails.filter((e) => !matches(e, p.filter!)); return; }
      for (const e of s.emails.filter((x) => matches(x, p.filter!))) {
        if (p.sub === 'type') e.type = null;
        else if (p.sub === 'primary') e.primary = false;
      }
      return;
    default:
      if (READ_ONLY.has(p.attr)) throw mutability(`${p.attr} is read-only`);
  }
}
