// The effective configuration: every setting of src/kernel/config.ts with its value and where the value came
// from (default, env or flag). A secret setting shows only whether it is set, never its value.
import type { Ctx } from '../directory/context.ts';
import * as o from '../kernel/view.ts';
import { SETTINGS, type ConfigValues } from '../kernel/config.ts';
import { requireSystemAdmin } from '../kernel/errors.ts';

export const SettingReportView = o.named('SettingReport', o.object({
  key: o.text({ description: 'the setting\'s name in the configuration' }),
  env: o.text({ description: 'its environment variable' }),
  flag: o.nullable(o.text({ description: 'its command-line flag' })),
  source: o.oneOf(['default', 'env', 'flag'], 'where the value came from'),
  value: o.optional(o.anyOf([o.text(), o.number(), o.bool()], 'the effective value; absent for secrets')),
  secret: o.bool(),
  set: o.optional(o.bool('secrets only: whether a value is configured')),
  default: o.text({ description: 'the default as text (empty for secrets)' }),
  description: o.text(),
}));
export type SettingReport = o.Out<typeof SettingReportView> & { key: keyof ConfigValues };

export const ConfigReportView = o.named('ConfigReport', o.object({
  settings: o.array(SettingReportView), dbPath: o.text(), backupsDir: o.text(),
}, 'the effective configuration'));

export function configReport(ctx: Ctx): o.Out<typeof ConfigReportView> & { settings: SettingReport[] } {
  requireSystemAdmin(ctx);
  const { config } = ctx;
  const settings = SETTINGS.map((s): SettingReport => {
    const base = { key: s.key, env: s.env, flag: s.flag ? `--${s.flag}` : null, source: config.sources[s.key], default: s.secret ? '' : s.default, description: s.doc };
    const value = config[s.key];
    return s.secret ? { ...base, secret: true, set: value !== '' } : { ...base, secret: false, value };
  });
  return { settings, dbPath: config.dbPath, backupsDir: config.backupsDir };
}
