import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One thing the fake answers with; answers are used in the order they were queued. */
export type FakeAnswer =
  | {
      text?: string;
      toolCalls?: { id?: string; name: string; args?: Record<string, unknown>; rawArguments?: string }[];
      usage?: { prompt_tokens: number; completion_tokens: number };
      delayMs?: number;
      /** Streamed answers only: the connection is cut after this many chunks (a stream that breaks mid-answer). */
      cutAfter?: number;
      /** Streamed answers only: pause between chunks. */
      chunkDelayMs?: number;
      /** Streamed answers only: after this many chunks the stream goes silent, its connection left open. */
      stallAfter?: number;
      /** Answers only once this settles: a test holds the model call open until it has done what it must first. */
      until?: Promise<unknown>;
    }
  /** An HTTP error status with an OpenAI-style error body. */
  | { status: number; message?: string; delayMs?: number; headers?: Record<string, string> }
  /** Never answers: the request stays open until the client gives up (abort, timeout). */
  | { hang: true }
  /** A 200 whose body is the given object, as is (for malformed answers). */
  | { raw: unknown };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  receivedAt: number;
  /** When the client closed the connection before the answer was sent (an abort or a timeout). */
  abortedAt?: number;
}

export interface FakeOpenAI {
  /** The base URL to give as OPENAI_BASE_URL (ends in /v1). */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Queues answers for the next requests; past the queue it answers text "done". */
  answer(...answers: FakeAnswer[]): void;
  close(): Promise<void>;
}

/** An OpenAI-compatible chat-completions server over real HTTP on loopback, recording every request. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: FakeAnswer[] = [];
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : undefined, receivedAt: Date.now() };
      requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished) recorded.abortedAt = Date.now();
      });
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) return send(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
      const answer = queue.shift() ?? { text: 'done' };
      // Clients that ask for a stream get the chat-completions SSE wire format.
      if (recorded.body?.stream === true) void streamReply(res, answer, recorded.body?.model ?? 'unknown');
      else void reply(res, answer, recorded.body?.model ?? 'unknown');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    answer: (...answers) => queue.push(...answers),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function reply(res: ServerResponse, answer: FakeAnswer, model: string): Promise<void> {
  if ('hang' in answer) return;
  if ('delayMs' in answer && answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
  if ('until' in answer) await answer.until;
  if (res.destroyed) return;
  if ('raw' in answer) return send(res, 200, answer.raw);
  if ('status' in answer) return send(res, answer.status, { error: { message: answer.message ?? `fake error ${answer.status}`, type: 'server_error' } }, answer.headers);
  const toolCalls = (answer.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? `fake_call_${i}`,
    type: 'function',
    function: { name: c.name, arguments: c.rawArguments ?? JSON.stringify(c.args ?? {}) },
  }));
  send(res, 200, {
    id: `chatcmpl-${Date.now()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: answer.text ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: answer.usage ? { ...answer.usage, total_tokens: answer.usage.prompt_tokens + answer.usage.completion_tokens } : undefined,
  });
}

/** The same answers as `reply`, as `chat.completion.chunk` Server-Sent Events ending in `data: [DONE]`. */
async function streamReply(res: ServerResponse, answer: FakeAnswer, model: string): Promise<void> {
  if ('hang' in answer) return;
  if ('delayMs' in answer && answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
  if ('until' in answer) await answer.until;
  if (res.destroyed) return;
  if ('status' in answer) return send(res, answer.status, { error: { message: answer.message ?? `fake error ${answer.status}`, type: 'server_error' } }, answer.headers);
  const base = { id: `chatcmpl-${Date.now()}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model };
  const chunks: unknown[] = [];
  if ('raw' in answer) chunks.push(answer.raw);
  else {
    const choice = (delta: unknown, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
    chunks.push(choice({ role: 'assistant', content: '' }));
    // Word by word, as a model writes.
    for (const word of (answer.text ?? '').split(/(?<=\s)(?=\S)/).filter(Boolean)) chunks.push(choice({ content: word }));
    (answer.toolCalls ?? []).forEach((c, i) => {
      const args = c.rawArguments ?? JSON.stringify(c.args ?? {});
      const half = Math.ceil(args.length / 2);
      chunks.push(choice({ tool_calls: [{ index: i, id: c.id ?? `fake_call_${i}`, type: 'function', function: { name: c.name, arguments: args.slice(0, half) } }] }));
      chunks.push(choice({ tool_calls: [{ index: i, function: { arguments: args.slice(half) } }] }));
    });
    chunks.push(choice({}, answer.toolCalls?.length ? 'tool_calls' : 'stop'));
    if (answer.usage) chunks.push({ ...base, choices: [], usage: { ...answer.usage, total_tokens: answer.usage.prompt_tokens + answer.usage.completion_tokens } });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const cutAfter = 'cutAfter' in answer ? answer.cutAfter : undefined;
  const pause = 'chunkDelayMs' in answer ? answer.chunkDelayMs : undefined;
  for (const [i, chunk] of chunks.entries()) {
    if (cutAfter !== undefined && i >= cutAfter) return void res.socket?.destroy();
    if ('stallAfter' in answer && answer.stallAfter !== undefined && i >= answer.stallAfter) return;
    if (res.destroyed) return;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    if (pause) await new Promise((r) => setTimeout(r, pause));
  }
  res.end('data: [DONE]\n\n');
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
