import { h, type VNode } from 'preact';
import { useEffect, useMemo, useReducer, useRef, useState } from 'preact/hooks';
import type { Agent, ConversationSummary, ConversationView, Receipt } from '@steerline/client';
import { createApi, describeError, storeKey } from './api';
import { announcementsFor, type Announcer } from './announce';
import { applyEvent, applyLive, emptyTimeline, runningTurn, type StreamEvent, type Timeline } from './timeline';
import { Composer, DEMO_SCRIPT, turnInput, type ModelChoice } from './views/composer';
import { ConversationListPage } from './views/conversations';
import { KeyPrompt } from './views/key-prompt';
import { TurnTimeline, type TimelineActions } from './views/timeline-view';
import { Transcript } from './views/transcript';

type Action = { kind: 'reset' } | { kind: 'event'; e: StreamEvent } | { kind: 'live'; type: string; data: unknown };

function reduce(t: Timeline, a: Action): Timeline {
  if (a.kind === 'reset') return emptyTimeline();
  if (a.kind === 'event') return applyEvent(t, a.e);
  return applyLive(t, a);
}

/** The page: conversations, the selected one's turns live from its event stream, its transcript, the composer. */
export function App(): VNode<any> {
  const [needKey, setNeedKey] = useState(false);
  const [keyVersion, setKeyVersion] = useState(0);
  const api = useMemo(() => createApi(() => setNeedKey(true)), [keyVersion]);
  const [conversations, setConversations] = useState<ConversationSummary[]>([]);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [selected, setSelected] = useState<string | undefined>(location.hash.slice(1) || undefined);
  const [timeline, dispatch] = useReducer(reduce, undefined, emptyTimeline);
  const [transcript, setTranscript] = useState<ConversationView | undefined>(undefined);
  const [status, setStatus] = useState('');
  const [text, setText] = useState('');
  const [model, setModel] = useState<ModelChoice>({ provider: 'scripted', name: '', script: JSON.stringify(DEMO_SCRIPT) });
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agent, setAgent] = useState('');
  // The turn this page started, until its TurnStarted arrives on the stream: Enter steers it already.
  const [startedTurn, setStartedTurn] = useState<{ conversationId: string; turnId: string } | undefined>(undefined);
  const [lastSteer, setLastSteer] = useState<Receipt | undefined>(undefined);
  const textarea = useRef<HTMLTextAreaElement>(null);
  const announcer = useRef<Announcer>({ seen: new Map() });
  const [announcement, setAnnouncement] = useState('');

  const fail = (err: unknown) => setStatus(describeError(err));

  // Conversations made here, kept at the top until the read models (a little behind the log) list them.
  const made = useRef<ConversationSummary[]>([]);
  const loadList = async (before?: string) => {
    try {
      const page = await api.client.listConversations({ limit: 20, before });
      made.current = made.current.filter((m) => !page.conversations.some((c) => c.id === m.id));
      setConversations((old) => (before ? [...old, ...page.conversations] : [...made.current, ...page.conversations]));
      setNext(page.next);
    } catch (err) {
      fail(err);
    }
  };
  useEffect(() => void loadList(), [api]);
  const loadAgents = () => api.client.listAgents().then((r) => setAgents(r.agents), fail);
  useEffect(() => void loadAgents(), [api]);

  const refreshTranscript = useRef<() => void>(() => undefined);
  useEffect(() => {
    dispatch({ kind: 'reset' });
    setTranscript(undefined);
    setLastSteer(undefined);
    announcer.current = { seen: new Map() };
    if (!selected) return;
    if (location.hash.slice(1) !== selected) history.replaceState(null, '', `#${selected}`);
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The read models trail the log a little: read again shortly after the last event.
    refreshTranscript.current = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        api.client.getConversation(selected).then((v) => !abort.signal.aborted && setTranscript(v), () => undefined);
        timer = setTimeout(() => {
          api.client.getConversation(selected).then((v) => !abort.signal.aborted && setTranscript(v), () => undefined);
          void loadList();
        }, 1000);
      }, 200);
    };
    api.client.getConversation(selected).then(setTranscript, fail);
    (async () => {
      try {
        for await (const e of api.client.events(selected, { signal: abort.signal, onLive: (m) => dispatch({ kind: 'live', ...m }) })) {
          dispatch({ kind: 'event', e: e as unknown as StreamEvent });
          refreshTranscript.current();
        }
      } catch (err) {
        if (!abort.signal.aborted) fail(err);
      }
    })();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [selected, api]);

  // Receipts and approvals are announced as they change (the live region below).
  useEffect(() => {
    const said = announcementsFor(announcer.current, timeline);
    if (said.length) setAnnouncement(said.join(' '));
  }, [timeline]);

  const pending = startedTurn?.conversationId === selected && !timeline.turns.some((t) => t.turnId === startedTurn?.turnId) ? startedTurn : undefined;
  const running = runningTurn(timeline) ?? pending;

  const newConversation = async (): Promise<string> => {
    const { id } = await api.client.createConversation();
    const summary = { id, createdAt: new Date().toISOString(), messageCount: 0 };
    made.current = [summary, ...made.current];
    setConversations((old) => [summary, ...old]);
    setSelected(id);
    return id;
  };
  const conversation = async (): Promise<string> => selected ?? newConversation();

  const send = async (urgency?: 'interrupt') => {
    const body = text.trim();
    if (!body) return;
    try {
      const cid = await conversation();
      if (running) {
        const receipt = await api.client.steerConversation(cid, body, { expectedTurnId: running.turnId, ...(urgency && { urgency }) });
        setLastSteer(receipt);
        setStatus(`Steer ${receipt.position} ${receipt.status}`);
      } else {
        const { turnId } = await api.client.startTurn(cid, turnInput(body, agent, model));
        setStartedTurn({ conversationId: cid, turnId });
        setStatus('Turn started');
      }
      setText('');
    } catch (err) {
      fail(err);
    }
  };

  const queue = async () => {
    const body = text.trim();
    if (!body) return;
    try {
      const cid = await conversation();
      const queued = await api.queueTurn(cid, turnInput(body, agent, model));
      setStatus(queued.status === 'queued' ? `Follow-up turn queued at position ${queued.position}` : 'Turn started');
      if (queued.status !== 'queued') setStartedTurn({ conversationId: cid, turnId: queued.turnId });
      setText('');
    } catch (err) {
      fail(err);
    }
  };

  const actions: TimelineActions = {
    cancel: (turnId) => api.client.cancel(turnId, 'cancelled from the console').then(() => setStatus('Cancel requested'), fail),
    withdraw: (turnId, steerId) => api.client.withdraw(turnId, steerId).then((r) => setStatus(`Steer ${r.position} withdrawn`), fail),
    edit: (turnId, steerId, newText) => api.editSteer(turnId, steerId, newText).then((r) => setStatus(`Steer ${r.position} edited`), fail),
    decide: (turnId, toolCallId, decision) => api.decide(turnId, toolCallId, decision).then(() => setStatus(`Tool call ${decision === 'approve' ? 'approved' : 'denied'}`), fail),
    resend: (old) => {
      setText(old);
      textarea.current?.focus();
    },
  };

  const steerNow = lastSteer && timeline.turns.find((t) => t.turnId === lastSteer.turnId)?.steers[lastSteer.steerId];
  const receiptLine = steerNow
    ? `Steer ${steerNow.position} “${steerNow.text}”: ${steerNow.status === 'queued' ? `queued at position ${steerNow.position}` : steerNow.status === 'delivered' ? `delivered at step ${steerNow.step}` : `dropped (${steerNow.reason})`}`
    : lastSteer
      ? `Steer ${lastSteer.position} “${lastSteer.text}”: ${lastSteer.status}`
      : '';

  if (needKey) {
    return h(
      'main',
      { class: 'console' },
      h('h1', null, 'Steerline console'),
      h(KeyPrompt, {
        onKey: (key) => {
          storeKey(key);
          setNeedKey(false);
          setKeyVersion((v) => v + 1);
        },
      }),
    );
  }

  return h(
    'div',
    { class: 'console' },
    h('header', null, h('h1', null, 'Steerline console'), h('p', { role: 'status', class: 'status', 'data-testid': 'status' }, status)),
    h(ConversationListPage, {
      conversations,
      selected,
      hasMore: next !== undefined,
      onSelect: setSelected,
      onNew: () => newConversation().catch(fail),
      onMore: () => void loadList(next),
    }),
    h(
      'main',
      null,
      selected
        ? [
            h('section', { class: 'turns', 'aria-labelledby': 'turns-title' }, h('h2', { id: 'turns-title' }, 'Turns'), timeline.turns.length === 0 && h('p', null, 'No turns yet.'), timeline.turns.map((t) => h(TurnTimeline, { key: t.turnId, turn: t, actions }))),
            h('section', { class: 'transcript-section', 'aria-labelledby': 'transcript-title' }, h('h2', { id: 'transcript-title' }, 'Transcript'), h(Transcript, { view: transcript })),
          ]
        : h('p', null, 'Pick a conversation, or type a prompt below to start one.'),
      h('p', { class: 'receipt', 'aria-live': 'polite', 'data-testid': 'receipt' }, receiptLine),
      h('p', { class: 'visually-hidden', 'aria-live': 'polite' }, announcement),
      h(Composer, { text, running: running !== undefined, model, textarea, agents, agent, onAgent: setAgent, onAgentsWanted: () => void loadAgents(), onText: setText, onModel: setModel, onSend: () => void send(), onQueue: () => void queue(), onInterrupt: () => void send('interrupt') }),
    ),
  );
}
