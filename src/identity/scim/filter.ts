// A small SCIM filter parser (RFC 7644 section 3.4.2.2), enough for what directories send:
// one comparison `attrPath op value` with a quoted JSON string (or true, false, null) as value.
// Logical operators, grouping and value paths in a query filter are refused with 400 invalidFilter;
// the result is matched against a fixed list of attributes and operators, and the SQL that uses
// it is fixed text with the value as a parameter (src/identity/scim/store.ts).
import { invalidFilter } from './errors.ts';

export const CORE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const MAX_FILTER = 1000;

export interface Comparison { path: string; op: string; value: string | boolean | null }

/** Strips the core User schema URN from an attribute path ("urn:...:User:userName" -> "userName"). */
export function stripCoreUrn(path: string): string {
  const prefix = `${CORE_USER_SCHEMA}:`;
  return path.length > prefix.length && path.slice(0, prefix.length).toLowerCase() === prefix.toLowerCase() ? path.slice(prefix.length) : path;
}

/** `attrPath SP op SP value`; throws invalidFilter on anything else. */
export function parseComparison(text: string): Comparison {
  if (text.length > MAX_FILTER) throw invalidFilter(`a filter has at most ${MAX_FILTER} characters`);
  const m = /^\s*([A-Za-z][\w.:$-]*)\s+([A-Za-z]+)(?:\s+(.*?))?\s*$/s.exec(text);
  if (!m) throw invalidFilter('a filter is one comparison: attribute operator "value"');
  const [, path, opText, rest] = m;
  const op = opText.toLowerCase();
  if (op === 'pr') throw invalidFilter('the pr operator is not supported');
  if (rest === undefined || rest === '') throw invalidFilter(`operator ${opText} needs a value`);
  return { path: stripCoreUrn(path), op, value: parseValue(rest) };
}

/** A JSON string literal (escapes as in JSON), true, false or null, and nothing after it. */
function parseValue(rest: string): string | boolean | null {
  const lower = rest.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (lower === 'null') return null;
  const m = /^"((?:[^"\\]|\\.)*)"(.*)$/s.exec(rest);
  if (!m) throw invalidFilter('a filter value is a quoted string, true, false or null');
  if (m[2].trim() !== '') throw invalidFilter('only one comparison is supported (no and, or, not or grouping)');
  try {
    return JSON.parse(`"${m[1]}"`) as string;
  } catch {
    throw invalidFilter('the filter value has an invalid escape');
  }
}

export type FilterAttribute = 'userName' | 'externalId' | 'id' | 'displayName' | 'emails.value';
export interface UserFilter { attribute: FilterAttribute; op: 'eq' | 'sw' | 'co'; value: string }

const ATTRIBUTES: Record<string, FilterAttribute> = {
  username: 'userName', externalid: 'externalId', id: 'id', displayname: 'displayName', emails: 'emails.value', 'emails.value': 'emails.value',
};
const OPERATORS = new Set(['eq', 'sw', 'co']);

/**
 * The GET Users filter: userName, externalId, id, displayName or emails(.value) with eq, sw or co
 * (attribute names and operators in any case). userName, displayName and e-mail addresses compare
 * without regard to case (the value is lower-cased here); externalId and id exactly.
 */
export function parseUserFilter(text: string): UserFilter {
  const c = parseComparison(text);
  const attribute = ATTRIBUTES[c.path.toLowerCase()];
  if (!attribute) throw invalidFilter(`filtering on ${c.path} is not supported (userName, externalId, id, displayName, emails.value)`);
  if (!OPERATORS.has(c.op)) throw invalidFilter(`operator ${c.op} is not supported (eq, sw, co)`);
  if (typeof c.value !== 'string') throw invalidFilter(`${attribute} is compared with a quoted string`);
  const exact = attribute === 'externalId' || attribute === 'id';
  return { attribute, op: c.op as UserFilter['op'], value: exact ? c.value : c.value.toLowerCase() };
}
