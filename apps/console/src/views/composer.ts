import { h, type RefObject, type VNode } from 'preact';
import type { Agent, StartTurnInput } from '@steerline/client';
// Beside scripts/start.mjs, which runs without apps/ (only scripts/ and dist/ are needed).
import demoModel from '../../../../scripts/lib/demo-model.json';

/**
 * The default demo: two sleeps, time enough to type a steer while the tool
 * runs, then an answer. `npm start` makes it the model of a turn that names
 * none too (STEERLINE_DEFAULT_MODEL, scripts/start.mjs).
 */
export const DEMO_SCRIPT = demoModel.script;

export type Provider = 'scripted' | 'openai' | 'anthropic';

export interface ModelChoice {
  provider: Provider;
  /** The model name, for openai and anthropic. */
  name: string;
  /** The scripted model's script, as JSON text. */
  script: string;
}

export interface ComposerProps {
  text: string;
  running: boolean;
  model: ModelChoice;
  textarea: RefObject<HTMLTextAreaElement | null>;
  /** The tenant's agents (GET /v1/agents), each at its latest version. */
  agents: Agent[];
  /** The agent new turns run, by name (its latest version); '' : the model below. */
  agent: string;
  onAgent(name: string): void;
  /** The picker got focus: time to read the agents again. */
  onAgentsWanted(): void;
  onText(text: string): void;
  onModel(model: ModelChoice): void;
  /** Enter: steer the running turn, or start one. */
  onSend(): void;
  /** Alt+Enter: queue a follow-up turn. */
  onQueue(): void;
  /** Ctrl+Enter (or ⌘+Enter) while a turn runs: stop what it is doing and steer it now. */
  onInterrupt(): void;
}

/** Enter sends, Shift+Enter is a new line, Ctrl+Enter interrupts and steers, Alt+Enter queues a follow-up turn. */
export function Composer(p: ComposerProps): VNode<any> {
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key !== 'Enter' || e.shiftKey || e.isComposing) return;
    e.preventDefault();
    if (e.altKey) p.onQueue();
    else if ((e.ctrlKey || e.metaKey) && p.running) p.onInterrupt();
    else p.onSend();
  };
  const hint = p.running ? 'Enter steers the running turn at its next boundary; Ctrl+Enter interrupts it and steers now' : 'Enter starts a turn';
  return h(
    'form',
    {
      class: 'composer',
      'aria-label': 'Composer',
      onSubmit: (e: Event) => {
        e.preventDefault();
        p.onSend();
      },
    },
    h('label', { for: 'composer-text' }, p.running ? 'Steer the running turn' : 'Prompt for a new turn'),
    h('textarea', {
      id: 'composer-text',
      ref: p.textarea,
      rows: 3,
      value: p.text,
      'aria-describedby': 'composer-hint',
      onInput: (e: Event) => p.onText((e.target as HTMLTextAreaElement).value),
      onKeyDown,
    }),
    h('p', { id: 'composer-hint', class: 'hint' }, `${hint}; Shift+Enter adds a line; Alt+Enter queues a follow-up turn.`),
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'submit' }, p.running ? 'Steer' : 'Start turn'),
      p.running && h('button', { type: 'button', class: 'interrupt', onClick: p.onInterrupt }, 'Interrupt and steer'),
      h('button', { type: 'button', onClick: p.onQueue }, 'Queue follow-up turn'),
    ),
    h(AgentPicker, p),
    h(
      'details',
      { class: 'model', hidden: p.agent !== '' },
      h('summary', null, `Model for new turns: ${p.model.provider}${p.model.provider === 'scripted' ? ' (demo script)' : ` ${p.model.name}`}`),
      h('label', { for: 'provider' }, 'Provider'),
      h(
        'select',
        { id: 'provider', value: p.model.provider, onChange: (e: Event) => p.onModel({ ...p.model, provider: (e.target as HTMLSelectElement).value as Provider }) },
        h('option', { value: 'scripted' }, 'scripted (demo)'),
        h('option', { value: 'openai' }, 'openai'),
        h('option', { value: 'anthropic' }, 'anthropic'),
      ),
      p.model.provider === 'scripted'
        ? [
            h('label', { for: 'script' }, 'Script (JSON)'),
            h('textarea', { id: 'script', rows: 4, value: p.model.script, onInput: (e: Event) => p.onModel({ ...p.model, script: (e.target as HTMLTextAreaElement).value }) }),
          ]
        : [
            h('label', { for: 'model-name' }, 'Model name'),
            h('input', { id: 'model-name', value: p.model.name, onInput: (e: Event) => p.onModel({ ...p.model, name: (e.target as HTMLInputElement).value }) }),
          ],
    ),
  );
}

/** Which stored agent new turns run; "none" leaves the model choice below in charge. */
function AgentPicker(p: ComposerProps): VNode<any> {
  const chosen = p.agents.find((a) => a.name === p.agent);
  return h(
    'div',
    { class: 'agent-picker' },
    h('label', { for: 'agent' }, 'Agent for new turns'),
    h(
      'select',
      { id: 'agent', value: p.agent, onFocus: p.onAgentsWanted, onChange: (e: Event) => p.onAgent((e.target as HTMLSelectElement).value) },
      h('option', { value: '' }, 'none (the model below)'),
      p.agents.map((a) => h('option', { key: a.name, value: a.name }, `${a.name} (version ${a.version})`)),
    ),
    chosen && h('p', { class: 'hint' }, `${chosen.description ?? chosen.name}: ${chosen.model.provider}${'name' in chosen.model && chosen.model.provider !== 'scripted' ? ` ${chosen.model.name}` : ''}, its latest version when the turn starts.`),
  );
}

/** What a new turn runs: the chosen agent, or the chosen model. */
export function turnInput(prompt: string, agent: string, model: ModelChoice): StartTurnInput {
  return agent ? { prompt, agent } : { prompt, model: modelSpec(model) };
}

/** The turn's model as the API takes it; throws on a script that is not JSON. */
export function modelSpec(choice: ModelChoice): StartTurnInput['model'] {
  if (choice.provider === 'scripted') return { provider: 'scripted', script: JSON.parse(choice.script) as unknown[] };
  return { provider: choice.provider, name: choice.name };
}
