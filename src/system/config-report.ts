// The effective configuration: every setting of src/config.ts with its value and where the value came
// from (default, env or flag). A secret setting shows only whether it is set, never its value.
import type { Ctx } from '../context.ts';
import { SETTINGS, type ConfigValues } from '../config.ts';
import { requireSystemAdmin } from '../http/errors.ts';

export interface SettingReport {
  key: keyof ConfigValues;
  env: string;
  flag: string | null;
  source: 'default' | 'env' | 'flag';
  /** Absent for secrets. */
  value?: string | number | boolean;
  secret: boolean;
  /** Only for secrets: whether a value is configured. */
  set?: boolean;
  default: string;
  description: string;
}

export function configReport(ctx: Ctx): { settings: SettingReport[]; dbPath: string; backupsDir: string } {
  requireSystemAdmin(ctx);
  const { config } = ctx;
  const settings = SETTINGS.map((s): SettingReport => {
    const base = { key: s.key, env: s.env, flag: s.flag ? `--${s.flag}` : null, source: config.sources[s.key], default: s.secret ? '' : s.default, description: s.doc };
    const value = config[s.key];
    return s.secret ? { ...base, secret: true, set: value !== '' } : { ...base, secret: false, value };
  });
  return { settings, dbPath: config.dbPath, backupsDir: config.backupsDir };
}
