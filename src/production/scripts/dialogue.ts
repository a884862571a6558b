// The dialogue of a shot: the dialogue lines of its scene in its episode's current script. Used by
// workflow prompts ({{shot.dialogue}}) and by the export's subtitles.
import type { Db } from '../../db/db.ts';
import type { ScriptContent, ScriptLine } from './content.ts';
import { currentRevision } from './store.ts';

export async function dialogueOfShot(db: Db, projectId: string, shot: { episode_id: string; scene_id: string | null }): Promise<ScriptLine[]> {
  if (!shot.scene_id) return [];
  const rev = await currentRevision(db, 'script', projectId, shot.episode_id);
  const scene = rev ? (JSON.parse(rev.content) as ScriptContent).scenes.find((s) => s.id === shot.scene_id) : undefined;
  return (scene?.lines ?? []).filter((l) => l.kind === 'dialogue');
}
