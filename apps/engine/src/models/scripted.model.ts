import type { ChatMessage, ModelSettings, ScriptStep } from '@steerline/contracts';
import { abortableDelay } from './abortable-delay';
import { ModelError, type ModelAnswer, type ModelProvider, type ModelRequest } from './model.provider';

/** What the scripted model was given besides the conversation: a turn's agent fields. */
export interface ScriptedRequestRecord {
  step: number;
  instructions?: string;
  settings: ModelSettings;
  /** The names of the tools it was offered. */
  tools: string[];
}

/** Requests the scripted model keeps on record: enough for a demo or a test to look at, bounded for a long-running engine. */
const RECORDED_REQUESTS = 100;

/**
 * The deterministic model of docs/design.md §6.1: answer n is script step n; past the end
 * it answers "done". Steers delivered since its previous answer are echoed as
 * `Acknowledged:` lines so anyone can see what the model got.
 *
 * It records each request's instructions, settings and offered tools (`recorded`),
 * and follows its script even where a step calls a tool the turn does not
 * allow, as a real model may call a tool it was not offered: the engine
 * answers that call `unknown_tool`, never runs it.
 */
export class ScriptedModel implements ModelProvider {
  readonly recorded: ScriptedRequestRecord[] = [];

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    if (request.model.provider !== 'scripted') throw new ModelError('model_failed', 'the scripted model got another provider’s request');
    this.record(request);
    const step: ScriptStep = request.model.script[request.step - 1] ?? { text: 'done' };
    if ('error' in step) {
      if (step.delayMs) await abortableDelay(step.delayMs, signal);
      throw new ModelError('model_failed', step.error);
    }
    const acknowledged = steersSinceLastAnswer(request.messages).map((text) => `Acknowledged: ${text}`);
    const calls = 'tool' in step ? [step.tool] : 'tools' in step ? step.tools : [];
    const text = [...acknowledged, ...(step.text !== undefined && step.text !== '' ? [step.text] : [])].join('\n');
    await stream(text, step.delayMs ?? 0, request.onDelta, signal);
    return {
      text,
      toolCalls: calls.map((c, i) => ({ id: `call_${request.step}_${i}`, name: c.name, args: c.args })),
    };
  }

  private record(request: ModelRequest): void {
    const { step, instructions, settings = {}, tools } = request;
    this.recorded.push({ step, ...(instructions !== undefined && { instructions }), settings, tools: tools.map((t) => t.name) });
    if (this.recorded.length > RECORDED_REQUESTS) this.recorded.shift();
  }
}

/**
 * Writes the answer word by word spread over the step's delay (docs/design.md §8.1),
 * or at once without one; the words joined are the text, whitespace included.
 */
async function stream(text: string, delayMs: number, onDelta: ((text: string) => void) | undefined, signal: AbortSignal): Promise<void> {
  const words = text === '' ? [] : text.split(/(?<=\s)(?=\S)/);
  if (!onDelta || words.length === 0) {
    if (delayMs) await abortableDelay(delayMs, signal);
    return;
  }
  const started = Date.now();
  for (const [i, word] of words.entries()) {
    // Word i is out at (i + 1)/n of the delay, the last one at its end.
    const due = (delayMs * (i + 1)) / words.length - (Date.now() - started);
    if (due > 0) await abortableDelay(due, signal);
    onDelta(word);
  }
}

function steersSinceLastAnswer(messages: readonly ChatMessage[]): string[] {
  const texts: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant') break;
    if (m.role === 'user' && m.steerId) texts.unshift(m.content);
  }
  return texts;
}
