// CMX3600 EDL of a timeline: TITLE, FCM: NON-DROP FRAME, then one event a clip in record order with
// its reel (at most 8 characters: the media's position and label), channels (V, A or B for both),
// a cut, and source in/out and record in/out time codes at the timeline's rate; each event is
// followed by "* FROM CLIP NAME:" (the media file's name) and a comment naming the shot.
import { timecode, type Timeline } from './timeline.ts';

/** Plain ASCII for the EDL's fixed fields and comments (other characters become "_"). */
const ascii = (s: string, max: number) => s.replace(/[^\x20-\x7e]/g, '_').slice(0, max);

export const reelOf = (fileName: string) => (fileName.replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9]/g, '').toUpperCase().slice(0, 8) || 'AX');

export function edlOf(t: Timeline): string {
  const lines = [`TITLE: ${ascii(t.title, 70)}`, 'FCM: NON-DROP FRAME', ''];
  const clips = [...t.clips].sort((a, b) => a.recordIn - b.recordIn || Number(b.video) - Number(a.video));
  clips.forEach((c, i) => {
    const channel = c.video && c.audio ? 'B' : c.video ? 'V' : 'A';
    const tc = (f: number) => timecode(f, t.rate);
    lines.push(
      `${String(i + 1).padStart(3, '0')}  ${reelOf(c.media.fileName).padEnd(8)} ${channel.padEnd(5)} C        `
        + `${tc(c.sourceIn)} ${tc(c.sourceIn + c.frames)} ${tc(c.recordIn)} ${tc(c.recordIn + c.frames)}`,
      `* FROM CLIP NAME: ${ascii(c.media.fileName, 120)}`,
      `* COMMENT: ${ascii(c.name, 120)}`,
      '',
    );
  });
  return lines.join('\r\n');
}
