// Search results as the API shows them: the target's ids, labels, and a snippet with highlight ranges.
import * as o from '../../kernel/view.ts';
import { SEARCH_TYPES, type SearchType } from '../../platform/search/index.ts';
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

type Tab = (typeof SEARCH_TYPES)[SearchType]['tab'];
const TABS = [...new Set(Object.values(SEARCH_TYPES).map((t) => t.tab))] as Tab[];

export const SearchResultView = o.named('SearchResult', o.object({
  type: o.oneOf(Object.keys(SEARCH_TYPES) as SearchType[]), typeLabel: o.text(), title: o.text(), subtitle: o.text(), status: o.text(),
  targetTab: o.oneOf(TABS, 'the console tab that opens the result'), targetId: o.text({ description: 'the id of the object found' }),
  organizationId: o.text(), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()),
  snippet: o.object({
    text: o.text({ description: 'an excerpt around the first match' }),
    highlights: o.array(o.array(o.int()), '[start, end) character ranges of the matched parts in text'),
  }),
}));

export const presentResult = (r: SearchRow): o.Out<typeof SearchResultView> => ({
  type: r.type,
  typeLabel: SEARCH_TYPES[r.type].label,
  title: r.title,
  subtitle: r.subtitle,
  status: r.status,
  targetTab: r.target_tab as Tab,
  targetId: r.target_id,
  organizationId: r.organization_id,
  workspaceId: r.workspace_id,
  projectId: r.project_id,
  snippet: highlights(r.snippet),
});
