// The global built-in templates every studio has on day one. They live in code and are written to
// the database at start: a template that is missing is inserted as version 1, one whose content
// changed in a new release gets a new version (runs keep the version they used).
import type { Db } from '../../db/db.ts';
import { capabilitiesOf, type StoredGate, type StoredStep } from './steps.ts';
import { insertTemplate, insertVersion, templateById, versionOf, advanceTemplate } from './store.ts';

export interface BuiltinTemplate {
  id: string; templateKey: string; name: string; category: string; description: string; steps: StoredStep[]; gates: StoredGate[];
}

const DIALOGUE = '{{shot.dialogue|shot.description|shot.title}}';
const step = (s: Partial<StoredStep> & Pick<StoredStep, 'key' | 'label' | 'jobKind'>): StoredStep => ({
  requiresShot: true, dependsOnPrevious: true, prompt: null, parameters: {}, inputFromPrevious: false, ...s,
});

/** A built-in whose description ends by naming the connector capabilities its steps need. */
const builtin = (t: BuiltinTemplate): BuiltinTemplate => ({
  ...t, description: `${t.description} Needs connectors with the capabilities ${capabilitiesOf(t.steps).join(', ')} (one connector may have them all).`,
});

export const BUILTIN_TEMPLATES: BuiltinTemplate[] = [
  builtin({
    id: 'wft_builtin_shot_to_cut',
    templateKey: 'shot-to-episode-cut',
    name: 'Shot to episode cut',
    category: 'production',
    description: 'Generates the shot\'s still, animates it into a clip (image-to-video), records the shot\'s voice line and joins the '
      + 'episode\'s shots, each with its voice line, into the episode cut. Still and clip take the shot\'s format (the delivery spec\'s '
      + 'size in the shot\'s aspect ratio, the shot\'s duration target).',
    steps: [
      step({ key: 'shot_image', label: 'Shot still', jobKind: 'image', dependsOnPrevious: false }),
      step({ key: 'shot_video', label: 'Image to video', jobKind: 'video', inputFromPrevious: true }),
      step({ key: 'voice_line', label: 'Voice line', jobKind: 'tts', prompt: DIALOGUE }),
      step({ key: 'episode_cut', label: 'Episode cut', jobKind: 'compose', requiresShot: false }),
    ],
    gates: [
      { key: 'picture_qa', label: 'Picture QA of the cut (first and last frames, continuity)', blocking: true },
      { key: 'voice_qa', label: 'Voice line matches the script', blocking: false },
    ],
  }),
  builtin({
    id: 'wft_builtin_voice_over',
    templateKey: 'voice-over-pass',
    name: 'Voice-over pass',
    category: 'voice',
    description: 'Records the shot\'s voice line and transcribes it back, so that a reviewer can compare the transcript with the script.',
    steps: [
      step({ key: 'voice_line', label: 'Voice line', jobKind: 'tts', prompt: DIALOGUE, dependsOnPrevious: false }),
      step({ key: 'transcript_check', label: 'Transcript of the recording', jobKind: 'asr', prompt: DIALOGUE, inputFromPrevious: true }),
    ],
    gates: [{ key: 'voice_qa', label: 'Voice line matches the script', blocking: true }],
  }),
];

const content = (name: string, category: string, description: string, steps: string, gates: string) =>
  JSON.stringify([name, category, description, steps, gates]);

/** Writes the built-in templates that are missing or changed; returns the ids given a new version. */
export async function syncBuiltinTemplates(db: Db, now: string): Promise<string[]> {
  const changed: string[] = [];
  await db.tx(async () => {
    for (const b of BUILTIN_TEMPLATES) {
      const steps = JSON.stringify(b.steps);
      const gates = JSON.stringify(b.gates);
      const row = await templateById(db, b.id);
      const version = {
        template_id: b.id, name: b.name, category: b.category, status: 'active' as const, description: b.description,
        default_adapter_id: null, steps, gates, created_by: null, created_at: now,
      };
      if (!row) {
        await insertTemplate(db, { id: b.id, scope: 'global', organization_id: null, workspace_id: null, template_key: b.templateKey, version: 1, created_by: null, created_at: now, updated_at: now });
        await insertVersion(db, { ...version, version: 1 });
        changed.push(b.id);
        continue;
      }
      const current = (await versionOf(db, b.id, row.version))!;
      if (content(current.name, current.category, current.description, current.steps, current.gates) === content(b.name, b.category, b.description, steps, gates)) continue;
      await insertVersion(db, { ...version, version: row.version + 1 });
      await advanceTemplate(db, b.id, row.version, now);
      changed.push(b.id);
    }
  });
  return changed;
}
