/**
 * An agent written with the OpenAI Agents SDK, steered mid-turn through
 * Steerline. Two tools: `get_weather` (answers at once) and `book_trip` (waits
 * for a person's approval, which gives you time to steer). The agent's loop runs
 * here; Steerline keeps the turn's record, its steers and their receipts.
 *
 *   npm run build   # once
 *   STEERLINE_URL=http://127.0.0.1:3000 OPENAI_API_KEY=sk-… node dist/examples/openai-agents/main.js "Plan a weekend in Lisbon"
 *
 * Any OpenAI-compatible chat-completions server works (OPENAI_BASE_URL, MODEL):
 * the agent uses the SDK's chat-completions model (`useResponses: false`). It prints the turn's id
 * and a curl line to steer it; steer or approve from the console as well.
 */
import { Agent, OpenAIProvider, setTracingDisabled, tool, type Model } from '@openai/agents';
import { z } from 'zod';
import { Steerline, type SteerlineTurn } from '@steerline/openai-agents';

const env = process.env;
const say = (fields: Record<string, unknown>) => console.log(JSON.stringify({ agent: 'openai-agents', ...fields }));

function tripAgent(model: Model, turn: () => SteerlineTurn, baseUrl: string): Agent {
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather forecast for a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => JSON.stringify({ city, forecast: 'sunny', highC: 24 }),
  });
  const bookTrip = tool({
    name: 'book_trip',
    description: 'Books a trip to a city on a date. A person approves each booking.',
    parameters: z.object({ city: z.string(), date: z.string() }),
    execute: async ({ city, date }, _context, details) => {
      const toolCallId = details?.toolCall?.callId ?? '';
      say({ event: 'waiting for approval', toolCallId, approve: `curl -X POST ${baseUrl}/v1/turns/${turn().id}/approvals/${toolCallId} -H 'content-type: application/json' -d '{"decision":"approve"}'` });
      const { decision, reason } = await turn().approval({ toolCallId });
      if (decision === 'denied') return JSON.stringify({ booked: false, reason: reason ?? 'a person declined' });
      return JSON.stringify({ booked: true, city, date, reference: `TRIP-${city.slice(0, 3).toUpperCase()}-1` });
    },
  });
  return new Agent({ name: 'Trip planner', instructions: 'You plan short trips. Use the tools.', model, tools: [getWeather, bookTrip] });
}

async function main(): Promise<void> {
  setTracingDisabled(true);
  const baseUrl = env.STEERLINE_URL ?? 'http://127.0.0.1:3000';
  const steerline = new Steerline({ baseUrl, apiKey: env.STEERLINE_API_KEY });
  const provider = new OpenAIProvider({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY, useResponses: false });
  const model = await provider.getModel(env.MODEL ?? 'gpt-4o-mini');

  const conversationId = env.CONVERSATION_ID ?? (await steerline.client.createConversation()).id;
  const prompt = process.argv[2] ?? 'Check the weather in Lisbon and book a trip there for Saturday.';
  const turn = await steerline.startTurn({ conversationId, prompt, model: { provider: 'openai', name: env.MODEL ?? 'gpt-4o-mini' }, approvals: { tools: ['book_trip'] } });
  say({ event: 'started', conversationId, turnId: turn.id, steer: `curl -X POST ${baseUrl}/v1/turns/${turn.id}/steers -H 'content-type: application/json' -d '{"text":"make it Porto"}'` });

  const result = await turn.run(tripAgent(model, () => turn, baseUrl), prompt, { maxTurns: 20 });
  say({ event: 'completed', turnId: turn.id, text: result.finalOutput });
}

main().catch((err) => {
  say({ event: 'failed', error: String(err) });
  process.exit(1);
});
