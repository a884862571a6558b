// A template's steps and gates as stored (every field explicit), the rules across them, and the
// prompt placeholders a step may use.
import { validationFailed } from '../../kernel/errors.ts';
import { COMPOSE_KIND, templateComposeProblems } from '../jobs/compose-job.ts';
import type { GateInput, StepInput } from './schema.ts';

export interface StoredStep {
  key: string; label: string; jobKind: string; requiresShot: boolean; dependsOnPrevious: boolean;
  prompt: string | null; parameters: Record<string, unknown>; inputFromPrevious: boolean;
}
export interface StoredGate { key: string; label: string; blocking: boolean }

/**
 * The connector capability a step needs: its job kind (a connector's `capability` list names the
 * kinds of work it does), none for the local compose step.
 */
export const capabilityOf = (step: Pick<StoredStep, 'jobKind'>): string | null => (step.jobKind === COMPOSE_KIND ? null : step.jobKind);

/** The distinct capabilities a template's steps need, in step order. */
export const capabilitiesOf = (steps: ReadonlyArray<Pick<StoredStep, 'jobKind'>>): string[] =>
  [...new Set(steps.map(capabilityOf).filter((c) => c !== null))];

/** What a prompt placeholder may name; `{{a|b}}` takes the first that is not empty. */
export const PLACEHOLDERS = ['shot.prompt', 'shot.title', 'shot.description', 'shot.dialogue', 'episode.title', 'project.name'] as const;
export type PromptValues = Partial<Record<(typeof PLACEHOLDERS)[number], string>>;
export const DEFAULT_PROMPT = '{{shot.prompt|shot.description|shot.title|episode.title|project.name}}';
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

const namesIn = (text: string): string[][] =>
  [...text.matchAll(PLACEHOLDER)].map((m) => m[1].split('|').map((n) => n.trim()));

export function renderPrompt(template: string, values: PromptValues): string {
  return template.replace(PLACEHOLDER, (_all, inner: string) => {
    for (const name of inner.split('|').map((n) => n.trim())) {
      const value = values[name as keyof PromptValues]?.trim();
      if (value) return value;
    }
    return '';
  }).trim();
}

/** Steps with every field set; 422 naming the step on a rule across fields. */
export function normalizeSteps(steps: StepInput[]): StoredStep[] {
  const problems: Record<string, string> = {};
  const seen = new Set<string>();
  const out = steps.map((s, i): StoredStep => {
    const at = `steps[${i}]`;
    if (seen.has(s.key)) problems[`${at}.key`] = `repeats the step key "${s.key}"; step keys are unique within a template`;
    seen.add(s.key);
    const compose = s.jobKind === COMPOSE_KIND;
    if (i === 0 && s.dependsOnPrevious) problems[`${at}.dependsOnPrevious`] = 'the first step has no previous step';
    const dependsOnPrevious = i > 0 && (s.dependsOnPrevious ?? true);
    if (s.inputFromPrevious && !dependsOnPrevious) problems[`${at}.inputFromPrevious`] = 'needs dependsOnPrevious: the previous step\'s media exist only once it completed';
    if (compose && s.requiresShot) problems[`${at}.requiresShot`] = 'a compose step joins the shots of an episode; it cannot be bound to one shot';
    if (compose && s.inputFromPrevious) problems[`${at}.inputFromPrevious`] = 'a compose step takes the videos of the episode\'s shots';
    if (compose && s.prompt) problems[`${at}.prompt`] = 'a compose step has no prompt';
    if (compose) for (const [field, why] of Object.entries(templateComposeProblems(s.parameters ?? {}))) problems[`${at}.${field}`] = why;
    const unknown = namesIn(s.prompt ?? '').flat().filter((n) => !(PLACEHOLDERS as readonly string[]).includes(n));
    if (unknown.length) problems[`${at}.prompt`] = `unknown placeholder(s) ${unknown.map((n) => `"${n}"`).join(', ')}; known: ${PLACEHOLDERS.join(', ')}`;
    return {
      key: s.key, label: s.label, jobKind: s.jobKind, requiresShot: s.requiresShot ?? false, dependsOnPrevious,
      prompt: s.prompt ?? null, parameters: s.parameters ?? {}, inputFromPrevious: s.inputFromPrevious ?? false,
    };
  });
  if (Object.keys(problems).length) throw validationFailed(problems);
  return out;
}

export function normalizeGates(gates: GateInput[]): StoredGate[] {
  const problems: Record<string, string> = {};
  const seen = new Set<string>();
  gates.forEach((g, i) => {
    if (seen.has(g.key)) problems[`gates[${i}].key`] = `repeats the gate key "${g.key}"`;
    seen.add(g.key);
  });
  if (Object.keys(problems).length) throw validationFailed(problems);
  return gates.map((g) => ({ key: g.key, label: g.label, blocking: g.blocking ?? true }));
}
