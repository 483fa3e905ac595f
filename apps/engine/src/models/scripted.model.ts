import type { ChatMessage, ScriptStep } from '@steerline/contracts';
import { abortableDelay } from './abortable-delay';
import { ModelError, type ModelAnswer, type ModelProvider, type ModelRequest } from './model.provider';

/**
 * The deterministic model of docs/design.md §6.1: answer n is script step n; past the end
 * it answers "done". Steers delivered since its previous answer are echoed as
 * `Acknowledged:` lines so anyone can see what the model got.
 */
export class ScriptedModel implements ModelProvider {
  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    if (request.model.provider !== 'scripted') throw new ModelError('model_failed', 'the scripted model got another provider’s request');
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
}

/**
 * Writes the answer word by word spread over the step's delay (docs/design.md §11),
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
