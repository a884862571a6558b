// The text answers (chat, prompt, transcription), deterministic from their input. Chat sits on a
// benchmark's hot path (thousands of calls a second), so it uses a plain FNV-1a fingerprint rather
// than a crypto hash object per call.

/** FNV-1a 32-bit of the UTF-16 code units, as 8 hex digits. */
export function fingerprint(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

const REPLY_ECHO_CHARS = 400;

/** The assistant's answer to `text`: the same text always gets the same answer. */
export function chatReply(text: string): string {
  return `svc-chat ${fingerprint(text)}: ${text.slice(0, REPLY_ECHO_CHARS)}`;
}

/** What the "transcription" of a file says: its name, size and the start of its SHA-256. */
export function transcript(fileName: string, size: number, sha256Hex: string): string {
  return `transcript of ${fileName}: ${size} bytes, sha256 ${sha256Hex.slice(0, 12)}`;
}

/** A token count estimate (about four characters a token, at least one). */
export function tokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}
