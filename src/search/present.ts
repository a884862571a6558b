// Search results as the API shows them: the target's ids, labels, and a snippet with highlight ranges.
import { SEARCH_TYPES } from './index.ts';
import { MARK_CLOSE, MARK_OPEN, type SearchRow } from './service.ts';

/** Snippet text without markers, and [start, end) ranges of the matched parts. */
export function highlights(marked: string): { text: string; highlights: Array<[number, number]> } {
  let text = '';
  const ranges: Array<[number, number]> = [];
  let open = -1;
  for (const ch of marked) {
    if (ch === MARK_OPEN) open = text.length;
    else if (ch === MARK_CLOSE) {
      if (open >= 0) ranges.push([open, text.length]);
      open = -1;
    } else text += ch;
  }
  return { text, highlights: ranges };
}

export const presentResult = (r: SearchRow) => ({
  type: r.type,
  typeLabel: SEARCH_TYPES[r.type].label,
  title: r.title,
  subtitle: r.subtitle,
  status: r.status,
  targetTab: r.target_tab,
  targetId: r.target_id,
  organizationId: r.organization_id,
  workspaceId: r.workspace_id,
  projectId: r.project_id,
  snippet: highlights(r.snippet),
});
