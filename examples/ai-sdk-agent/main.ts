/**
 * An agent written with the Vercel AI SDK, steered mid-turn through Steerline.
 * Two tools: `get_weather` (answers at once) and `book_trip` (waits for a
 * person's approval, which gives you time to steer). The agent's loop runs
 * here; Steerline keeps the turn's record, its steers and their receipts.
 *
 *   npm run build   # once
 *   STEERLINE_URL=http://127.0.0.1:3000 OPENAI_API_KEY=sk-… node dist/examples/ai-sdk-agent/main.js "Plan a weekend in Lisbon"
 *
 * Any OpenAI-compatible server works (OPENAI_BASE_URL, MODEL). It prints the
 * turn's id and a curl line to steer it; steer or approve from the console
 * (http://127.0.0.1:3000/console) as well. STREAM=1 uses streamText.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { Steerline } from '@steerline/ai-sdk';

const env = process.env;
const say = (fields: Record<string, unknown>) => console.log(JSON.stringify({ agent: 'ai-sdk', ...fields }));

async function main(): Promise<void> {
  const baseUrl = env.STEERLINE_URL ?? 'http://127.0.0.1:3000';
  const steerline = new Steerline({ baseUrl, apiKey: env.STEERLINE_API_KEY });
  const provider = createOpenAICompatible({ name: 'openai', baseURL: env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1', apiKey: env.OPENAI_API_KEY, includeUsage: true });
  const model = provider(env.MODEL ?? 'gpt-4o-mini');

  const conversationId = env.CONVERSATION_ID ?? (await steerline.client.createConversation()).id;
  const prompt = process.argv[2] ?? 'Check the weather in Lisbon and book a trip there for Saturday.';
  // book_trip waits for a person's decision (Steerline's approvals: API, console, events).
  const turn = await steerline.startTurn({ conversationId, prompt, model: { provider: 'openai', name: model.modelId }, approvals: { tools: ['book_trip'] } });
  say({ event: 'started', conversationId, turnId: turn.id, steer: `curl -X POST ${baseUrl}/v1/turns/${turn.id}/steers -H 'content-type: application/json' -d '{"text":"make it Porto"}'` });

  const tools = {
    get_weather: tool({
      description: 'The weather forecast for a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => ({ city, forecast: 'sunny', highC: 24 }),
    }),
    book_trip: tool({
      description: 'Books a trip to a city on a date. A person approves each booking.',
      inputSchema: z.object({ city: z.string(), date: z.string() }),
      execute: async ({ city, date }, { toolCallId }) => {
        say({ event: 'waiting for approval', toolCallId, approve: `curl -X POST ${baseUrl}/v1/turns/${turn.id}/approvals/${toolCallId} -H 'content-type: application/json' -d '{"decision":"approve"}'` });
        const { decision, reason } = await turn.approval({ toolCallId });
        if (decision === 'denied') return { booked: false, reason: reason ?? 'a person declined' };
        return { booked: true, city, date, reference: `TRIP-${city.slice(0, 3).toUpperCase()}-1` };
      },
    }),
  };

  const text = await turn.run(async (hooks) => {
    if (env.STREAM !== '1') return (await generateText({ model, tools, stopWhen: stepCountIs(20), ...hooks })).text;
    const result = streamText({ model, tools, stopWhen: stepCountIs(20), ...hooks });
    for await (const delta of result.textStream) process.stdout.write(delta);
    process.stdout.write('\n');
    return result.text;
  });
  say({ event: 'completed', turnId: turn.id, text });
}

main().catch((err) => {
  say({ event: 'failed', error: String(err) });
  process.exit(1);
});
