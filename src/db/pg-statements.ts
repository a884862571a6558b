// The statement texts PostgresDb sends (postgres.ts): `?` placeholders numbered once per text, and a
// name for the texts run often, so that each connection prepares them once and the server parses and
// plans them once per connection instead of on every run. A table changing shape under a prepared
// plan (a migration while the process runs) makes the server refuse the name (stalePlan); every
// text is then unnamed, and names given later are new ones.
import { numberPlaceholders } from './pg-sql.ts';

const TRANSLATION_LIMIT = 2000;
/** A statement text run this many times is prepared by name on each connection that runs it again. */
const PREPARE_AFTER = 3;
/** Texts given a name, at most (until a stale plan renames them all): what a connection may hold prepared. */
const NAMED_LIMIT = 500;
/** Only these are prepared by name (not DECLARE, SET, LISTEN...). */
const PREPARABLE = /^\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH)\b/i;

/** A statement text as sent: placeholders numbered, and its prepared statement's name once it has one. */
export interface Translation { text: string; uses: number; name: string | undefined }

/**
 * 0A000 "cached plan must not change result type": a table a prepared statement reads changed shape
 * (a migration while this process runs); the name must not be used again.
 */
export const stalePlan = (err: unknown) =>
  (err as { code?: unknown } | null)?.code === '0A000' && /cached plan must not change result type/.test((err as Error).message);

export class StatementTexts {
  private readonly translations = new Map<string, Translation>();
  /** Names given in this generation; a stale plan starts the next generation. */
  private named = 0;
  private generation = 0;

  /** `sql` with numbered placeholders, translated once per text; named once it has run PREPARE_AFTER times. */
  translate(sql: string, params: number): Translation {
    let t = this.translations.get(sql);
    if (t === undefined) {
      t = { text: numberPlaceholders(sql, params), uses: 0, name: undefined };
      if (this.translations.size >= TRANSLATION_LIMIT) this.translations.delete(this.translations.keys().next().value!);
      this.translations.set(sql, t);
    }
    if (t.name === undefined && ++t.uses >= PREPARE_AFTER && this.named < NAMED_LIMIT && PREPARABLE.test(t.text)) {
      t.name = `svc${this.generation}_${++this.named}`;
    }
    return t;
  }

  /** After a stale plan: every text is unnamed, and names given later are new ones (the old ones stay unused on their connections). */
  forgetNames(): void {
    this.generation++;
    this.named = 0;
    for (const t of this.translations.values()) {
      t.name = undefined;
      t.uses = 0;
    }
  }
}
