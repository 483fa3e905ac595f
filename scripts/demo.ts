/**
 * `npm run demo`: a scripted turn against running services (GATEWAY_URL,
 * default http://127.0.0.1:3000; STEERLINE_API_KEY when the gateway has keys).
 * It steers the turn mid-flight, shows the conversation's live events and each
 * steer's receipt as they happen, then prints the transcript as the model saw it.
 * In a terminal it keeps a progress line and lets you type steers of your own;
 * with `--ask` it also asks (y/n) before each tool call runs. With CI=true or
 * without a terminal it runs alone, approves each call itself and prints plain lines.
 */
import { SteerlineClient, SteerlineClientError, type Receipt, type StreamedEvent, type StreamedLive } from '@steerline/client';
import { TerminalScreen } from './terminal-screen';

const GATEWAY_URL = process.env.GATEWAY_URL ?? 'http://127.0.0.1:3000';
const interactive = Boolean(process.stdout.isTTY && process.stdin.isTTY) && process.env.CI !== 'true';
/** `npm run demo -- --ask`: the person at the terminal decides each tool call. */
const ask = interactive && process.argv.includes('--ask');
const client = new SteerlineClient({ baseUrl: GATEWAY_URL, apiKey: process.env.STEERLINE_API_KEY });
const TURN_TIMEOUT_MS = 60_000;

/**
 * In a terminal, lines scroll above a status line and an input line of their own
 * (see TerminalScreen); elsewhere progress is printed when it changes.
 */
class Display {
  private lastPlain = '';
  private screen?: TerminalScreen;
  /** Where a line typed in the terminal goes, once there is a turn to steer. */
  onTyped?: (text: string) => void;

  constructor() {
    if (!interactive) return;
    this.screen = new TerminalScreen({ input: process.stdin, output: process.stdout }, (text) => (this.onTyped ? this.onTyped(text) : this.line('no turn to steer yet')));
    this.screen.start();
  }

  line(text: string): void {
    if (this.screen) this.screen.line(text);
    else process.stdout.write(`${text}\n`);
  }

  /** `detail` only shows on the terminal's status line; plain output would repeat it on every event. */
  progress(text: string, detail = ''): void {
    if (this.screen) this.screen.setStatus(`${text}${detail}`);
    else if (text !== this.lastPlain) process.stdout.write(`progress: ${text}\n`);
    this.lastPlain = text;
  }

  /** Gives the terminal back: the last status stays as a line, and output scrolls as usual. */
  done(): void {
    this.screen?.stop();
    this.screen = undefined;
  }
}

const display = new Display();
const tally = { step: 0, queued: 0, delivered: 0, dropped: 0, events: 0 };
const started = Date.now();
const clock = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;

function showProgress(state = 'running'): void {
  display.progress(`[${state}] step ${tally.step} · steers queued ${tally.queued} · delivered ${tally.delivered} · dropped ${tally.dropped}`, ` · ${tally.events} events`);
}

function describe({ event }: StreamedEvent): string {
  switch (event.type) {
    case 'ConversationCreated':
      return 'conversation created';
    case 'TurnQueued':
      return `turn queued at position ${event.data.position}: "${event.data.prompt}"`;
    case 'TurnStarted':
      return `turn started: "${event.data.prompt}" (${event.data.model.provider} model)`;
    case 'TurnResumed':
      return `turn resumed by engine ${event.data.engineId} (its engine ${event.data.previousEngineId} was lost; resume ${event.data.attempt})`;
    case 'ModelRequested':
      tally.step = event.data.step;
      return `model request for step ${event.data.step}${event.data.steerIds.length ? `, carrying ${event.data.steerIds.length} steer(s)` : ''}`;
    case 'ModelResponded':
      return event.data.toolCalls.length
        ? `model calls ${event.data.toolCalls.map((c) => `${c.name} ${JSON.stringify(c.args)}`).join(', ')}`
        : `model answers: ${JSON.stringify(event.data.text)}`;
    case 'ModelInterrupted':
      return `model answer cut by an interrupt after ${JSON.stringify(event.data.partialText)}`;
    case 'ToolCallStarted':
      return `tool ${event.data.name} running`;
    case 'ToolCallFinished':
      return `tool ${event.data.name} ${event.data.ok ? 'finished' : 'failed'} in ${Math.round(event.data.durationMs)} ms`;
    case 'ToolApprovalRequested':
      return `tool ${event.data.name} ${JSON.stringify(event.data.args)} WAITS FOR APPROVAL (call ${event.data.toolCallId})`;
    case 'ToolApprovalDecided':
      return `tool call ${event.data.toolCallId} ${event.data.decision.toUpperCase()} by ${event.data.by}${event.data.reason ? `: ${event.data.reason}` : ''}`;
    case 'SteerQueued':
      tally.queued++;
      return `steer #${event.data.position} accepted, queued: "${event.data.text}"`;
    case 'SteerEdited':
      return `steer ${event.data.steerId} edited: "${event.data.previousText}" → "${event.data.text}"`;
    case 'SteeringDelivered':
      tally.queued--;
      tally.delivered++;
      return `steer #${event.data.position} DELIVERED at step ${event.data.step}'s ${event.data.boundary} boundary, in request ${event.data.requestStep}`;
    case 'SteerDropped':
      tally.queued--;
      tally.dropped++;
      return `steer #${event.data.position} DROPPED (${event.data.reason}${event.data.nextTurnId ? ` to turn ${event.data.nextTurnId}` : ''}); text handed back: "${event.data.text}"`;
    case 'TurnCompleted':
      return `turn completed after ${event.data.steps} steps`;
    case 'TurnCancelled':
      return `turn cancelled: ${event.data.reason}`;
    case 'TurnFailed':
      return `turn failed: ${event.data.error.message}`;
  }
}

function receiptLine(label: string, r: Receipt): string {
  switch (r.status) {
    case 'delivered':
      return `receipt for "${r.text}" (${label}): delivered at step ${r.step}, ${r.boundary}`;
    case 'queued':
      return `receipt for "${r.text}" (${label}): queued at position ${r.position}`;
    case 'dropped':
      return `receipt for "${r.text}" (${label}): dropped (${r.reason})`;
  }
}

/** Tool calls waiting for the person at the terminal, oldest first. */
const asked: { turnId: string; toolCallId: string; name: string }[] = [];

/** A call waits for approval: with --ask the next y/n line answers it; otherwise it is approved at once. */
function onApprovalRequested(turnId: string, toolCallId: string, name: string): void {
  if (!ask) {
    void decide(turnId, toolCallId, true, 'approved automatically (non-interactive)');
    return;
  }
  asked.push({ turnId, toolCallId, name });
  if (asked.length === 1) display.line(`run tool ${name} (${toolCallId})? [y/n]`);
}

async function decide(turnId: string, toolCallId: string, approve: boolean, reason?: string): Promise<void> {
  const answer = approve ? client.approve(turnId, toolCallId, reason) : client.deny(turnId, toolCallId, reason);
  await answer.then(
    (a) => display.line(`${clock()}  decision recorded: ${a.toolCallId} ${a.decision}`),
    (err: unknown) => display.line(`${clock()}  decision refused: ${(err as Error).message}`),
  );
}

/** Streams events until the turn ends; resolves with the turn's last event type, if it ended. */
async function follow(conversationId: string, turnEnded: AbortController): Promise<string | undefined> {
  let end: string | undefined;
  for await (const e of client.events(conversationId, { live: true, signal: turnEnded.signal, reconnectDelayMs: 200, maxReconnects: 20 })) {
    if ('live' in e) {
      showLive(e);
      continue;
    }
    writing = '';
    tally.events++;
    display.line(`${clock()}  #${String(e.id).padEnd(4)} ${e.type.padEnd(19)} ${describe(e)}`);
    showProgress();
    if (e.event.type === 'ToolApprovalRequested') onApprovalRequested(e.event.turnId, e.event.data.toolCallId, e.event.data.name);
    if (e.type === 'TurnCompleted' || e.type === 'TurnCancelled' || e.type === 'TurnFailed') {
      end = e.type;
      turnEnded.abort();
    }
  }
  return end;
}

let writing = '';

/**
 * Live output on the progress line (a terminal only; plain output gets the
 * whole text with ModelResponded): the answer as it is written, a bar for a
 * running tool.
 */
function showLive(e: StreamedLive): void {
  if (!interactive) return;
  if (e.message.type === 'ModelDelta') {
    writing += e.message.text;
    display.progress(`[writing] ${writing.replace(/\s+/g, ' ').slice(-70)}`);
  } else {
    const done = e.message.progress ?? 0;
    const bar = '#'.repeat(Math.round(done * 20)).padEnd(20, '.');
    display.progress(`[tool] [${bar}] ${Math.round(done * 100)}% ${e.message.message ?? ''}`);
  }
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The demo's own steers, timed to land while step 1's tool runs. */
async function scriptedSteers(turnId: string): Promise<void> {
  await wait(300);
  // Waits for its settlement: the answer comes once the model has the steer.
  const first = client.steer(turnId, 'Keep the public API unchanged', { waitSeconds: 15 }).then((r) => display.line(`${clock()}  ${receiptLine('waited for', r)}`));
  // Awaited below; this only keeps an early failure of the others from leaving it unhandled.
  first.catch(() => undefined);
  await wait(150);
  const second = await client.steer(turnId, 'Add a test for the empty input first');
  display.line(`${clock()}  ${receiptLine('answered at once', second)}`);
  const third = await client.steer(turnId, 'Rename everything to snake_case');
  display.line(`${clock()}  ${receiptLine('answered at once', third)}`);
  await wait(200);
  display.line(`${clock()}  second thoughts: withdrawing "${third.text}"`);
  display.line(`${clock()}  ${receiptLine('withdrawn', await client.withdraw(turnId, third.steerId))}`);
  await first;
}

/** In a terminal: each line typed while the turn runs is sent as a steer. */
function typedSteers(turnId: string): void {
  if (!interactive) return;
  display.onTyped = (text) => {
    const question = asked[0];
    if (question && /^[yn]$/i.test(text.trim())) {
      asked.shift();
      display.line(`${clock()}  you: ${text.trim().toLowerCase() === 'y' ? 'approve' : 'deny'} ${question.toolCallId}`);
      void decide(question.turnId, question.toolCallId, text.trim().toLowerCase() === 'y');
      if (asked[0]) display.line(`run tool ${asked[0].name} (${asked[0].toolCallId})? [y/n]`);
      return;
    }
    display.line(`${clock()}  you: "${text}"`);
    client.steer(turnId, text).then(
      (r) => display.line(`${clock()}  ${receiptLine('yours', r)}`),
      (err: unknown) => display.line(`${clock()}  your steer was refused: ${(err as Error).message}`),
    );
  };
  display.line('type a steer and press Enter to send it while the turn runs');
}

async function printTranscript(conversationId: string, turnId: string): Promise<void> {
  // The read model follows the log with a small delay: wait for it to show the turn's end.
  for (let i = 0; i < 50; i++) {
    const turn = await client.getTurn(turnId).catch(() => undefined);
    if (turn && turn.status !== 'running') break;
    await wait(200);
  }
  const conversation = await client.getConversation(conversationId);
  display.line('\nTranscript (the model context, in order):');
  for (const m of conversation.messages) {
    const who = m.role === 'user' && m.steerId ? 'user (steer)' : m.role;
    const calls = m.role === 'assistant' && m.toolCalls?.length ? ` [calls ${m.toolCalls.map((c) => c.name).join(', ')}]` : '';
    display.line(`  ${who.padEnd(13)} ${JSON.stringify(m.content)}${calls}`);
  }
  display.line('\nSteers:');
  for (const s of conversation.steers) display.line(`  #${s.position} ${s.status.padEnd(9)} ${s.reason ? `(${s.reason}) ` : ''}"${s.text}"`);
}

async function main(): Promise<void> {
  display.line(`Steerline demo against ${GATEWAY_URL}${interactive ? '' : ' (non-interactive)'}`);
  const health = await fetch(`${GATEWAY_URL}/healthz`).catch(() => undefined);
  if (!health?.ok) throw new Error(`no gateway answers at ${GATEWAY_URL}: start the services with \`npm start\`, or set GATEWAY_URL`);

  const { id: conversationId } = await client.createConversation();
  // Without a terminal the scripted steers (650 ms of pauses and four requests) must all land in step 1's call, however busy the machine.
  const toolMs = interactive ? 6000 : 3000;
  const { turnId } = await client.startTurn(conversationId, {
    prompt: 'Refactor the parser',
    model: {
      provider: 'scripted',
      script: [{ tool: { name: 'sleep', args: { ms: toolMs } } }, { tool: { name: 'sleep', args: { ms: toolMs / 2 } } }, { text: 'Refactoring done: the public API is unchanged and the empty input has its test.', delayMs: 800 }],
    },
    // Each sleep asks first (docs/design.md §9): the person with --ask, else the demo approves it itself.
    // A plain terminal session skips the question to keep its screen for the steers.
    ...((ask || !interactive) && { approvals: { tools: ['sleep'] } }),
  });
  display.line(`conversation ${conversationId}, turn ${turnId}`);
  showProgress();

  const turnEnded = new AbortController();
  const timeout = setTimeout(() => turnEnded.abort(), TURN_TIMEOUT_MS);
  typedSteers(turnId);
  const steering = scriptedSteers(turnId);
  const end = await follow(conversationId, turnEnded);
  clearTimeout(timeout);
  await steering;
  if (end !== 'TurnCompleted') throw new Error(end ? `the turn ended with ${end}` : `the turn did not end within ${TURN_TIMEOUT_MS / 1000} s`);
  showProgress('done');
  display.done();
  await printTranscript(conversationId, turnId);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    display.done();
    const detail = err instanceof SteerlineClientError ? `${err.code}: ${err.message}` : (err as Error).message;
    process.stderr.write(`demo failed: ${detail}\n`);
    process.exit(1);
  },
);
