// The Svc-Scope request header: its name and its syntax. The gate reads it (src/gate/access.ts
// requestedScope); the OpenAPI document describes it as a reusable parameter.

/** The per-request scope selector every caller may send (docs/identity.md#scope); lower case as node keys it. */
export const SCOPE_HEADER = 'svc-scope';
/** One `level=id` pair of a selector, as a regular expression source. */
export const SCOPE_PAIR_SOURCE = '\\s*(organization|workspace|project)\\s*=\\s*([A-Za-z0-9_-]{1,64})\\s*';
/** A whole Svc-Scope value, as a pattern (the OpenAPI parameter's) and its maximum length. */
export const SCOPE_SELECTOR_PATTERN = `^${SCOPE_PAIR_SOURCE}([;,]${SCOPE_PAIR_SOURCE})*$`;
export const SCOPE_SELECTOR_MAX = 300;
