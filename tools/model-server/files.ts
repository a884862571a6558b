// Rendered files over HTTP: `GET /files/:name` (the URLs the openai-compatible and http-json
// answers hold); the ComfyUI bridge's /view serves the same cache under ComfyUI's query names.
import { HttpError, type Reply, type Route } from './http.ts';
import type { Rendered, Renderer } from './render.ts';

export function fileUrl(base: string, file: Rendered): string {
  return `${base}/files/${file.name}`;
}

export function fileReply(file: Rendered): Reply {
  return { status: 200, file: file.path, size: file.size, type: file.mimeType };
}

/** The cached file called `name`, or 404. */
export async function cachedFile(renderer: Renderer, name: string): Promise<Reply> {
  const file = await renderer.file(name);
  if (!file) throw new HttpError(404, `no file named ${name}`);
  return fileReply(file);
}

export function fileRoutes(renderer: Renderer): Route[] {
  return [{ method: 'GET', pattern: '/files/:name', handler: ({ params }) => cachedFile(renderer, params.name) }];
}
