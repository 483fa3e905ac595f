/**
 * An example tool service: offers two tools to every Steerline engine on the
 * same NATS and prefix, using only `@steerline/contracts` and NATS.
 *
 *   NATS_URL=nats://127.0.0.1:4222 STEERLINE_PREFIX=steerline node dist/examples/tool-service/main.js
 *
 * It prints one JSON line per thing worth seeing (ready, call, cancel) so a
 * person — or a test — can follow what the engine asked of it.
 */
import { ToolFailure, connectNats, installProcessGuard, serveTools, type ServedTool } from '@steerline/runtime';

// Logs and goes on after a stray rejection; exits for a restart after an unexpected throw.
installProcessGuard('example-tools');

const say = (fields: Record<string, unknown>) => console.log(JSON.stringify({ service: 'example-tools', ...fields }));

const wordCount: ServedTool = {
  descriptor: {
    name: 'word_count',
    description: 'Counts the words of a text.',
    parameters: { type: 'object', properties: { text: { type: 'string', description: 'The text to count.' } }, required: ['text'], additionalProperties: false },
  },
  run(args, { call }) {
    say({ event: 'call', tool: 'word_count', callId: call.callId, turnId: call.turnId });
    // Arguments come from a model: check them, and answer a mistake with an error the model can read.
    if (typeof args.text !== 'string') throw new ToolFailure('invalid_arguments', 'text must be a string');
    const words = args.text.split(/\s+/).filter(Boolean).length;
    return { words };
  },
};

const slowEcho: ServedTool = {
  descriptor: {
    name: 'slow_echo',
    description: 'Returns its text after waiting the given milliseconds; stops when the call is cancelled.',
    parameters: {
      type: 'object',
      properties: { text: { type: 'string' }, ms: { type: 'integer', minimum: 0, maximum: 600000 } },
      required: ['text', 'ms'],
      additionalProperties: false,
    },
  },
  async run(args, { signal, call, progress }) {
    say({ event: 'call', tool: 'slow_echo', callId: call.callId, turnId: call.turnId });
    const ms = Number(args.ms);
    if (!Number.isInteger(ms) || ms < 0 || ms > 600_000) throw new ToolFailure('invalid_arguments', 'ms must be an integer from 0 to 600000');
    const started = Date.now();
    // Live output: the person steering sees how far the call is.
    const ticker = setInterval(() => progress(Math.min(1, (Date.now() - started) / ms), 'echoing'), 250);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        clearInterval(ticker);
        resolve();
      }, ms);
      signal.addEventListener(
        'abort',
        () => {
          clearInterval(ticker);
          clearTimeout(timer);
          say({ event: 'cancelled', tool: 'slow_echo', callId: call.callId, turnId: call.turnId, reason: (signal.reason as Error)?.message });
          reject(signal.reason);
        },
        { once: true },
      );
    });
    return String(args.text);
  },
};

async function main(): Promise<void> {
  const prefix = process.env.STEERLINE_PREFIX || 'steerline';
  const nc = await connectNats(process.env.NATS_URL || 'nats://127.0.0.1:4222', 'steerline-example-tools');
  const server = serveTools(nc, prefix, 'example-tools', [wordCount, slowEcho], (err) => say({ event: 'error', error: (err as Error)?.message }));
  await server.ready;
  say({ event: 'ready', prefix, tools: ['word_count', 'slow_echo'] });
  const stop = () => {
    server.stop();
    nc.drain().finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  say({ event: 'failed', error: (err as Error).message });
  process.exit(1);
});
