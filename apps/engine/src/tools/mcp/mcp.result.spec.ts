import { ToolError } from '../tool.registry';
import { MCP_OUTPUT_MAX_CHARS, outputOf } from './mcp.result';

describe('an MCP tool result as the model reads it', () => {
  it('passes text, and summarises other content honestly', () => {
    const png = Buffer.alloc(12 * 1024).toString('base64');
    expect(
      outputOf({
        content: [
          { type: 'text', text: 'two files:' },
          { type: 'image', mimeType: 'image/png', data: png },
          { type: 'audio', mimeType: 'audio/wav', data: 'AAAA' },
          { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt' },
          { type: 'resource', resource: { uri: 'file:///b.txt', text: 'inline b' } },
          { type: 'resource', resource: { uri: 'file:///c.bin', mimeType: 'application/octet-stream', blob: 'AAAA' } },
        ],
      }),
    ).toBe('two files:\n[image: image/png, 12 KB]\n[audio: audio/wav, 3 B]\n[resource link: file:///a.txt (a.txt)]\ninline b\n[resource: file:///c.bin, application/octet-stream, 3 B]');
  });

  it('passes structured content as JSON when the server sent no text for it', () => {
    expect(outputOf({ content: [], structuredContent: { words: 3 } })).toEqual({ words: 3 });
    expect(outputOf({ content: [{ type: 'text', text: '{"words":3}' }], structuredContent: { words: 3 } })).toBe('{"words":3}');
  });

  it('turns isError into an error result the model sees, not a failed turn', () => {
    let error: unknown;
    try {
      outputOf({ isError: true, content: [{ type: 'text', text: 'no such file' }] });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({ code: 'tool_error', message: 'no such file', fatal: false });
  });

  it('cuts an output longer than the limit, and says so', () => {
    const out = outputOf({ content: [{ type: 'text', text: 'x'.repeat(MCP_OUTPUT_MAX_CHARS + 5) }] }) as string;
    expect(out.endsWith('\n[… 5 more characters cut]')).toBe(true);
  });
});
