import { CONVERSATION_PAGE_HEADER, type ConversationPageLayout } from '@steerline/contracts';
import { encodePage, type EncodedPage } from './conversation-pages';

const OK_PREFIX = '{"ok":true,"data":';

/** The reply as the responder sends it (runtime `answer`): the envelope around the encoded text, and its header. */
function sent(page: EncodedPage) {
  const reply = encodePage(page);
  const body = Buffer.from(`${OK_PREFIX}${reply.dataJson}}`);
  const layout = JSON.parse(reply.headers(Buffer.byteLength(OK_PREFIX))[CONVERSATION_PAGE_HEADER]) as ConversationPageLayout;
  return { body, layout };
}

describe('a conversation page encoded once (qry.conversation)', () => {
  const turn = { id: 't1', status: 'completed', prompt: 'Écris « bonjour » 日本 🚀' };
  const messages = [
    { role: 'user', content: 'naïve café — ünïcode 🧪' },
    { role: 'assistant', content: 'plain' },
    { role: 'tool', content: '"quoted" \\ back\\slash\n new line' },
  ];
  const page: EncodedPage = {
    id: 'c1',
    createdAt: '2026-12-02T10:00:00.000Z',
    next: { section: 'messages', offset: 3 },
    items: { turns: [JSON.stringify(turn)], messages: messages.map((m) => JSON.stringify(m)), steers: [] },
  };

  it('is the same JSON as the page object, with the cursor', () => {
    const { body } = sent(page);
    expect(JSON.parse(body.toString())).toEqual({ ok: true, data: { id: 'c1', createdAt: page.createdAt, turns: [turn], messages, steers: [], next: page.next } });
  });

  it('its header names each section’s items by byte range, multi-byte text included, and leaves empty sections out', () => {
    const { body, layout } = sent(page);
    expect(layout).toMatchObject({ id: 'c1', createdAt: page.createdAt, next: page.next });
    expect(Object.keys(layout.sections)).toEqual(['turns', 'messages']);
    const section = (name: 'turns' | 'messages') => JSON.parse(`[${body.subarray(...layout.sections[name]!).toString()}]`);
    expect(section('turns')).toEqual([turn]);
    expect(section('messages')).toEqual(messages);
  });

  it('a last page has no cursor, and an empty page no ranges', () => {
    const { body, layout } = sent({ id: 'c2', createdAt: page.createdAt, items: { turns: [], messages: [], steers: [] } });
    expect(JSON.parse(body.toString()).data).toEqual({ id: 'c2', createdAt: page.createdAt, turns: [], messages: [], steers: [] });
    expect(layout).toEqual({ id: 'c2', createdAt: page.createdAt, sections: {} });
  });
});
