import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One thing the fake answers with; answers are used in the order they were queued. */
export type FakeAnthropicAnswer =
  | {
      text?: string;
      toolCalls?: { id?: string; name: string; args?: Record<string, unknown> }[];
      usage?: { input_tokens: number; output_tokens: number };
      /** The connection is cut after this many events (a stream that breaks mid-answer). */
      cutAfter?: number;
      /** Pause between events. */
      chunkDelayMs?: number;
    }
  /** An HTTP error status with an Anthropic-style error body. */
  | { status: number; message?: string };

export interface RecordedAnthropicRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  /** When the client closed the connection before the answer ended (an abort). */
  abortedAt?: number;
}

export interface FakeAnthropic {
  /** The base URL to give as ANTHROPIC_BASE_URL (the SDK adds /v1/messages). */
  baseUrl: string;
  requests: RecordedAnthropicRequest[];
  answer(...answers: FakeAnthropicAnswer[]): void;
  close(): Promise<void>;
}

/** A Messages API server over real HTTP on loopback speaking its streaming wire format, recording every request. */
export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const queue: FakeAnthropicAnswer[] = [];
  const requests: RecordedAnthropicRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedAnthropicRequest = { path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : undefined };
      requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished) recorded.abortedAt = Date.now();
      });
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) return error(res, 404, 'not found');
      void stream(res, queue.shift() ?? { text: 'done' }, recorded.body?.model ?? 'unknown');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    answer: (...answers) => queue.push(...answers),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function stream(res: ServerResponse, answer: FakeAnthropicAnswer, model: string): Promise<void> {
  if ('status' in answer) return error(res, answer.status, answer.message ?? `fake error ${answer.status}`);
  const usage = answer.usage ?? { input_tokens: 10, output_tokens: 5 };
  const events: Array<[string, unknown]> = [
    ['message_start', { type: 'message_start', message: { id: `msg_${Date.now()}`, type: 'message', role: 'assistant', content: [], model, stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } }],
  ];
  let index = 0;
  if (answer.text) {
    events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
    for (const word of answer.text.split(/(?<=\s)(?=\S)/)) events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: word } }]);
    events.push(['content_block_stop', { type: 'content_block_stop', index: index++ }]);
  }
  for (const [i, call] of (answer.toolCalls ?? []).entries()) {
    const json = JSON.stringify(call.args ?? {});
    const half = Math.ceil(json.length / 2);
    events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id ?? `toolu_${i}`, name: call.name, input: {} } }]);
    for (const part of [json.slice(0, half), json.slice(half)]) events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } }]);
    events.push(['content_block_stop', { type: 'content_block_stop', index: index++ }]);
  }
  const stop = answer.toolCalls?.length ? 'tool_use' : 'end_turn';
  events.push(['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }]);
  events.push(['message_stop', { type: 'message_stop' }]);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [i, [name, data]] of events.entries()) {
    if (answer.cutAfter !== undefined && i >= answer.cutAfter) return void res.socket?.destroy();
    if (res.destroyed) return;
    res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    if (answer.chunkDelayMs) await new Promise((r) => setTimeout(r, answer.chunkDelayMs));
  }
  res.end();
}

function error(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'error', error: { type: status === 529 ? 'overloaded_error' : 'api_error', message } }));
}
