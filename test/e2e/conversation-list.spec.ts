import { SteerlineClient, SteerlineClientError } from '@steerline/client';
import { startStack, type Stack } from '../support/stack';

describe('GET /v1/conversations: the tenant’s conversations, newest first, paged', () => {
  let stack: Stack;
  const alpha = () => new SteerlineClient({ baseUrl: stack.url, apiKey: 'key-alpha' });
  const beta = () => new SteerlineClient({ baseUrl: stack.url, apiKey: 'key-beta' });

  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_API_KEYS: 'key-alpha:alpha,key-beta:beta' } });
  });
  afterAll(() => stack?.close());

  it('pages through one tenant’s conversations with the next cursor, none twice, none of another tenant', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await alpha().createConversation()).id);
    const { id: other } = await beta().createConversation();
    const { turnId } = await alpha().startTurn(created[4], { prompt: 'a title for the list', model: { provider: 'scripted', script: [{ text: 'hi' }] } });
    await stack.turnEnded(turnId);
    await stack.settled();

    const first = await alpha().listConversations({ limit: 2 });
    expect(first.conversations.map((c) => c.id)).toEqual([created[4], created[3]]);
    expect(first.conversations[0]).toMatchObject({ messageCount: 2, lastTurn: { id: turnId, status: 'completed', prompt: 'a title for the list' } });
    expect(first.conversations[1].lastTurn).toBeUndefined();
    expect(first.next).toEqual(expect.any(String));

    // A conversation created between pages goes to the top, not into the next page.
    await alpha().createConversation();
    await stack.settled();
    const second = await alpha().listConversations({ limit: 2, before: first.next });
    const third = await alpha().listConversations({ limit: 2, before: second.next });
    expect([...second.conversations, ...third.conversations].map((c) => c.id)).toEqual([created[2], created[1], created[0]]);
    expect(third.next).toBeUndefined();

    const theirs = await beta().listConversations();
    expect(theirs.conversations.map((c) => c.id)).toEqual([other]);
  });

  it('refuses a cursor it did not make and a limit out of range with invalid_request', async () => {
    for (const query of ['?before=yesterday', '?limit=0', '?limit=101', '?limit=ten']) {
      const res = await stack.api('GET', `/conversations${query}`, undefined, { authorization: 'Bearer key-alpha' });
      expect([query, res.status, res.body.error.code]).toEqual([query, 400, 'invalid_request']);
    }
    await expect(new SteerlineClient({ baseUrl: stack.url }).listConversations()).rejects.toMatchObject({ code: 'unauthorized' } satisfies Partial<SteerlineClientError>);
  });
});
