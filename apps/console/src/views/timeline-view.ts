import { h, type VNode } from 'preact';
import { useState } from 'preact/hooks';
import type { SteerEntry, TimelineItem, ToolEntry, TurnEntry } from '../timeline';

/** What the timeline's buttons do; the app wires them to the API. */
export interface TimelineActions {
  cancel(turnId: string): void;
  withdraw(turnId: string, steerId: string): void;
  edit(turnId: string, steerId: string, text: string): void;
  resend(text: string): void;
  decide(turnId: string, toolCallId: string, decision: 'approve' | 'deny'): void;
}

/** One turn: what the model and the tools did, and every steer with its state, in the order it happened. */
export function TurnTimeline({ turn, actions }: { turn: TurnEntry; actions: TimelineActions }): VNode<any> {
  const live = turn.status === 'running' || turn.status === 'queued';
  const agent = turn.agent ? `agent ${turn.agent.name}, version ${turn.agent.version}` : undefined;
  const title = `Turn ${short(turn.turnId)}: ${turn.status}${turn.status === 'queued' && turn.queuePosition ? ` (position ${turn.queuePosition})` : ''}${agent ? ` — ${agent}` : ''}`;
  return h(
    'section',
    { class: `turn turn-${turn.status}`, 'aria-label': title, 'data-turn': turn.turnId, ...(turn.agent && { 'data-agent': `${turn.agent.name}@${turn.agent.version}` }) },
    h('h3', null, title, live && h('button', { type: 'button', class: 'cancel', onClick: () => actions.cancel(turn.turnId) }, turn.status === 'queued' ? 'Cancel queued turn' : 'Cancel turn')),
    h('p', { class: 'prompt' }, h('span', { class: 'label' }, 'Prompt: '), turn.prompt),
    h('ol', { class: 'timeline' }, turn.items.map((item) => h('li', { key: itemKey(item), class: `item item-${item.kind}`, 'data-kind': item.kind }, renderItem(turn, item, actions)))),
  );
}

function itemKey(item: TimelineItem): string {
  switch (item.kind) {
    case 'step':
      return `step-${item.step}`;
    case 'tool':
      return `tool-${item.toolCallId}`;
    case 'steer':
      return `steer-${item.steerId}`;
    case 'resumed':
      return `resumed-${item.attempt}`;
    case 'end':
      return 'end';
  }
}

function renderItem(turn: TurnEntry, item: TimelineItem, actions: TimelineActions): VNode<any> | string {
  switch (item.kind) {
    case 'step': {
      const s = turn.steps[item.step];
      const calls = s.toolCallIds.length ? ` → ${s.toolCallIds.length} tool call${s.toolCallIds.length > 1 ? 's' : ''}` : '';
      if (s.interrupted) {
        // What was cut, struck through and said in words: never shown as an answer.
        return h('div', { 'data-step': item.step, class: 'interrupted' }, h('strong', null, `Step ${item.step}`), ' model, cut by an interrupt: ', h('del', { class: 'answer' }, s.text || '(nothing written yet)'));
      }
      return h('div', { 'data-step': item.step }, h('strong', null, `Step ${item.step}`), ` model${calls}: `, h('span', { class: 'answer' }, s.text || (s.answered ? '(no text)' : 'thinking…')));
    }
    case 'tool':
      return h(ToolItem, { turnId: turn.turnId, call: turn.tools[item.toolCallId], actions });
    case 'steer':
      return h(SteerItem, { turnId: turn.turnId, steer: turn.steers[item.steerId], actions });
    case 'resumed':
      return h('div', { class: 'resumed' }, h('strong', null, 'Turn resumed'), ` on engine ${item.engineId}${item.previousEngineId ? ` after ${item.previousEngineId} was lost` : ''} (attempt ${item.attempt})`);
    case 'end':
      return h('div', { class: 'end' }, h('strong', null, `Turn ${turn.status}`), endDetail(turn));
  }
}

function endDetail(turn: TurnEntry): string {
  if (turn.status === 'completed') return `: ${turn.text ?? ''}`;
  if (turn.status === 'cancelled') return ` (${turn.cancelReason ?? 'cancelled'})`;
  if (turn.status === 'failed') return `: ${turn.error?.code ?? ''} ${turn.error?.message ?? ''}`;
  return '';
}

function ToolItem({ turnId, call, actions }: { turnId: string; call: ToolEntry; actions: TimelineActions }): VNode<any> {
  const label = `${call.name} ${JSON.stringify(call.args)}`;
  const state =
    call.state === 'awaiting_approval'
      ? 'waiting for approval'
      : call.state === 'running'
        ? 'running'
        : call.state === 'ok'
          ? `ok in ${Math.round(call.durationMs ?? 0)} ms`
          : `failed: ${call.error?.code ?? ''} ${call.error?.message ?? ''}`;
  return h(
    'div',
    { 'data-tool': call.toolCallId, 'data-state': call.state },
    h('strong', null, 'Tool '),
    h('code', null, label),
    ` — ${state}`,
    call.approval && ` (${call.approval}${call.approvalBy && call.approvalBy !== 'user' ? ` by ${call.approvalBy}` : ''})`,
    call.state === 'running' &&
      h('progress', { max: 1, ...(call.progress !== undefined ? { value: call.progress } : {}), 'aria-label': `${call.name} progress` }),
    call.message && h('span', { class: 'progress-message' }, ` ${call.message}`),
    call.state === 'awaiting_approval' &&
      h(
        'span',
        { class: 'actions' },
        h('button', { type: 'button', onClick: () => actions.decide(turnId, call.toolCallId, 'approve') }, `Approve ${call.name}`),
        h('button', { type: 'button', onClick: () => actions.decide(turnId, call.toolCallId, 'deny') }, `Deny ${call.name}`),
      ),
  );
}

function SteerItem({ turnId, steer, actions }: { turnId: string; steer: SteerEntry; actions: TimelineActions }): VNode<any> {
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const state =
    steer.status === 'queued'
      ? `${steer.urgent ? 'interrupting, ' : ''}queued at position ${steer.position}${steer.waitingFor?.length ? ` (waiting for ${steer.waitingFor.join(', ')}, which cannot be interrupted)` : ''}`
      : steer.status === 'delivered'
        ? `delivered at step ${steer.step}${steer.boundary === 'turn_end' ? ' (turn end)' : steer.boundary === 'interrupt' ? ' (interrupt)' : ''}`
        : `dropped: ${steer.reason ?? ''}`;
  const text = `“${steer.text}”${steer.edited ? ' (edited)' : ''}`;
  if (editing !== undefined && steer.status === 'queued') {
    const save = (e: Event) => {
      e.preventDefault();
      actions.edit(turnId, steer.steerId, editing);
      setEditing(undefined);
    };
    return h(
      'form',
      { onSubmit: save, class: 'edit' },
      h('label', { for: `edit-${steer.steerId}` }, `Edit steer ${steer.position}`),
      h('input', { id: `edit-${steer.steerId}`, value: editing, onInput: (e: Event) => setEditing((e.target as HTMLInputElement).value) }),
      h('button', { type: 'submit' }, 'Save'),
      h('button', { type: 'button', onClick: () => setEditing(undefined) }, 'Discard edit'),
    );
  }
  return h(
    'div',
    { 'data-steer': steer.steerId, 'data-status': steer.status },
    h('strong', null, `Steer ${steer.position} `),
    text,
    ` — ${state}`,
    steer.status === 'queued' &&
      h(
        'span',
        { class: 'actions' },
        h('button', { type: 'button', onClick: () => actions.withdraw(turnId, steer.steerId) }, `Withdraw steer ${steer.position}`),
        h('button', { type: 'button', onClick: () => setEditing(steer.text) }, `Edit steer ${steer.position}`),
      ),
    steer.status === 'dropped' && h('span', { class: 'actions' }, h('button', { type: 'button', onClick: () => actions.resend(steer.text) }, `Resend steer ${steer.position}`)),
  );
}

export function short(id: string): string {
  return id.slice(-8);
}
