import { ScriptedModel } from './scripted.model';

describe('the scripted model', () => {
  it('records what each request gave it besides the conversation, and keeps only the latest hundred', async () => {
    const model = new ScriptedModel();
    const tools = [{ name: 'echo', description: '', parameters: {} }];
    const request = { model: { provider: 'scripted' as const, name: 'scripted', script: [] }, messages: [], tools, instructions: 'Be brief.', settings: { temperature: 0 } };
    await model.complete({ ...request, step: 1 }, new AbortController().signal);
    expect(model.recorded).toEqual([{ step: 1, instructions: 'Be brief.', settings: { temperature: 0 }, tools: ['echo'] }]);
    for (let step = 2; step <= 120; step++) await model.complete({ ...request, step }, new AbortController().signal);
    expect(model.recorded).toHaveLength(100);
    expect(model.recorded[0].step).toBe(21);
  });
});
