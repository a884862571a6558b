// The SCIM User as the service keeps it (userName, externalId, name, displayName, emails, active),
// read from a POST or PUT payload. Attribute names are matched without regard to case (RFC 7643
// section 2.1); attributes outside this set (title, phoneNumbers, the enterprise extension, ...)
// are accepted and ignored. Booleans also come as the strings "True"/"False" (Microsoft Entra ID).
import { invalidValue, invalidSyntax } from './errors.ts';
import { stripCoreUrn } from './filter.ts';
import type { ScimUserRow } from './store.ts';

export interface ScimEmail { value: string; type: string | null; primary: boolean }

export interface ScimUserState {
  userName: string;
  externalId: string | null;
  givenName: string | null;
  familyName: string | null;
  formattedName: string | null;
  displayName: string | null;
  emails: ScimEmail[];
  active: boolean;
}

export const LIMITS = { userName: 320, externalId: 256, text: 200, emails: 20, emailType: 40 } as const;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value of `name` in `obj`, whatever the case of the key (and with or without the core URN). */
export function field(obj: Json, name: string): unknown {
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(obj)) if (stripCoreUrn(k).toLowerCase() === wanted) return v;
  return undefined;
}

export function asBoolean(v: unknown, what: string): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
  throw invalidValue(`${what} must be true or false`);
}

/** A string attribute: trimmed, within its length, without U+0000 (as every validated string); null, undefined and "" clear it. */
export function asText(v: unknown, what: string, max: number = LIMITS.text): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') throw invalidValue(`${what} must be a string`);
  const s = v.trim();
  if (s.length > max) throw invalidValue(`${what} has at most ${max} characters`);
  if (s.includes('\u0000')) throw invalidValue(`${what} must not contain the NUL character (U+0000)`);
  return s === '' ? null : s;
}

export function asUserName(v: unknown): string {
  const s = asText(v, 'userName', LIMITS.userName);
  if (!s) throw invalidValue('userName is required');
  return s;
}

export function asEmail(v: unknown): ScimEmail {
  if (!isObject(v)) throw invalidValue('each of emails is an object { value, type?, primary? }');
  const value = asText(field(v, 'value'), 'emails.value', LIMITS.userName);
  if (!value || !EMAIL.test(value)) throw invalidValue('emails.value must be an e-mail address');
  const primary = field(v, 'primary');
  return {
    value,
    type: asText(field(v, 'type'), 'emails.type', LIMITS.emailType)?.toLowerCase() ?? null,
    primary: primary === undefined || primary === null ? false : asBoolean(primary, 'emails.primary'),
  };
}

export function asEmails(v: unknown): ScimEmail[] {
  if (v === null || v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  if (list.length > LIMITS.emails) throw invalidValue(`at most ${LIMITS.emails} emails`);
  return onePrimary(list.map(asEmail));
}

/** At most one primary e-mail address: the last one marked wins. */
export function onePrimary(emails: ScimEmail[]): ScimEmail[] {
  const last = emails.map((e) => e.primary).lastIndexOf(true);
  return emails.map((e, i) => ({ ...e, primary: i === last }));
}

/** A User from a POST or PUT payload; `active` absent keeps `activeDefault`. */
export function userFromPayload(body: unknown, activeDefault: boolean): ScimUserState {
  if (!isObject(body)) throw invalidSyntax('the body is a SCIM User object');
  const name = field(body, 'name');
  if (name !== undefined && name !== null && !isObject(name)) throw invalidValue('name is an object { givenName, familyName, formatted }');
  const n: Json = isObject(name) ? name : {};
  const active = field(body, 'active');
  return {
    userName: asUserName(field(body, 'userName')),
    externalId: asText(field(body, 'externalId'), 'externalId', LIMITS.externalId),
    givenName: asText(field(n, 'givenName'), 'name.givenName'),
    familyName: asText(field(n, 'familyName'), 'name.familyName'),
    formattedName: asText(field(n, 'formatted'), 'name.formatted'),
    displayName: asText(field(body, 'displayName'), 'displayName'),
    emails: asEmails(field(body, 'emails')),
    active: active === undefined || active === null ? activeDefault : asBoolean(active, 'active'),
  };
}

export function stateOf(row: ScimUserRow): ScimUserState {
  return {
    userName: row.user_name, externalId: row.external_id, givenName: row.given_name, familyName: row.family_name,
    formattedName: row.formatted_name, displayName: row.display_name, emails: JSON.parse(row.emails) as ScimEmail[], active: row.active === 1,
  };
}

/** The account's e-mail address: the primary one, else a work one, else the first, else an e-mail userName. */
export function accountEmail(s: ScimUserState): string {
  const e = s.emails.find((x) => x.primary) ?? s.emails.find((x) => x.type === 'work') ?? s.emails[0];
  if (e) return e.value;
  if (EMAIL.test(s.userName)) return s.userName;
  throw invalidValue('a user needs an e-mail address: emails, or a userName that is one');
}

/** The account's display name: displayName, else name.formatted, else given and family name, else userName. */
export function accountName(s: ScimUserState): string {
  const joined = [s.givenName, s.familyName].filter(Boolean).join(' ');
  return (s.displayName ?? s.formattedName ?? (joined || s.userName)).slice(0, LIMITS.text);
}
