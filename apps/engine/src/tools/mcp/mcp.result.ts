import { ToolError } from '../tool.registry';

/** Longest tool output kept, in characters; the rest is cut with a note the model reads. */
export const MCP_OUTPUT_MAX_CHARS = 100_000;

type Content = { type: string; [field: string]: unknown };
export interface McpCallResult {
  content?: Content[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * A `tools/call` result as the model will read it. Text is passed as is; other
 * content is summarised honestly (`[image: image/png, 12 KB]`) rather than
 * dropped or pasted as base64. Structured content goes as JSON when the server
 * sent no text for it. `isError` becomes an error result the model sees.
 */
export function outputOf(result: McpCallResult): unknown {
  const parts = (result.content ?? []).map(describe);
  const text = parts.join('\n');
  if (result.isError) throw new ToolError('tool_error', truncate(text || 'the tool reported an error'));
  if (parts.length === 0 && result.structuredContent !== undefined) return result.structuredContent;
  return truncate(text);
}

function describe(c: Content): string {
  switch (c.type) {
    case 'text':
      return String(c.text ?? '');
    case 'image':
    case 'audio':
      return `[${c.type}: ${String(c.mimeType ?? 'unknown type')}, ${size(c.data)}]`;
    case 'resource_link':
      return `[resource link: ${String(c.uri ?? '')}${c.name ? ` (${String(c.name)})` : ''}]`;
    case 'resource': {
      const r = (c.resource ?? {}) as { uri?: unknown; mimeType?: unknown; text?: unknown; blob?: unknown };
      if (typeof r.text === 'string') return r.text;
      return `[resource: ${String(r.uri ?? '')}, ${String(r.mimeType ?? 'unknown type')}, ${size(r.blob)}]`;
    }
    default:
      return `[${c.type} content]`;
  }
}

/** The decoded size of base64 data, in words a reader knows. */
function size(base64: unknown): string {
  if (typeof base64 !== 'string') return 'no data';
  const bytes = Math.floor((base64.replace(/=+$/, '').length * 3) / 4);
  return bytes < 1024 ? `${bytes} B` : `${Math.round(bytes / 1024)} KB`;
}

function truncate(text: string): string {
  if (text.length <= MCP_OUTPUT_MAX_CHARS) return text;
  return `${text.slice(0, MCP_OUTPUT_MAX_CHARS)}\n[… ${text.length - MCP_OUTPUT_MAX_CHARS} more characters cut]`;
}
