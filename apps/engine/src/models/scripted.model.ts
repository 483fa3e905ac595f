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
    if (step.delayMs) await abortableDelay(step.delayMs, signal);
    if ('error' in step) throw new ModelError('model_failed', step.error);
    const acknowledged = steersSinceLastAnswer(request.messages).map((text) => `Acknowledged: ${text}`);
    const calls = 'tool' in step ? [step.tool] : 'tools' in step ? step.tools : [];
    const text = [...acknowledged, ...(step.text !== undefined && step.text !== '' ? [step.text] : [])].join('\n');
    return {
      text,
      toolCalls: calls.map((c, i) => ({ id: `call_${request.step}_${i}`, name: c.name, args: c.args })),
    };
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
