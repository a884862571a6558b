// LIKE patterns for a substring search: `%`, `_` and the escape character itself are taken
// literally; statements compare with `${db.dialect.likeAnyCase} ? ESCAPE '\'`, which ignores the case
// of ASCII letters only (other letters match exactly), as SQLite's LIKE does.

/** The pattern matching `term` anywhere in a value ("%term%", wildcards escaped with a backslash). */
export const likePattern = (term: string): string => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
