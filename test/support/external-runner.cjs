// A runner of an external turn as its own process, built on the client from dist/
// (npm run build): the runner-lost fault test kills it with SIGKILL mid-turn.
// argv: <gatewayUrl> <conversationId>. Prints one JSON line per stage; a line
// on stdin moves it on from step 1's tools to step 2's request.
const { SteerlineClient } = require('../../dist/libs/client/src/index.js');
const readline = require('node:readline');

async function main() {
  const [baseUrl, conversationId] = process.argv.slice(2);
  const client = new SteerlineClient({ baseUrl });
  const turn = await client.startExternalTurn(conversationId, { prompt: 'go' });
  const say = (line) => process.stdout.write(`${JSON.stringify({ turnId: turn.turnId, pid: process.pid, ...line })}\n`);
  await turn.reportAnswer({ step: 1, text: '', toolCalls: [{ id: 'call_1_0', name: 'sleep', args: { ms: 10 } }] });
  say({ stage: 'tools' });
  const input = readline.createInterface({ input: process.stdin });
  for await (const _line of input) {
    const next = await turn.reportResults(1, [{ toolCallId: 'call_1_0', ok: true, output: 'slept 10 ms', durationMs: 10 }]);
    say({ stage: 'model', next });
    break;
  }
  // Holds the turn (its lease renewed in the background) until it is killed.
  await turn.ended;
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
