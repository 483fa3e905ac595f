import { CONVERSATION_SECTIONS, type ConversationPage, type ConversationQuery, type ConversationSection } from '@steerline/contracts';
import type { HttpResponse } from '../http/http.types';

export type PageReader = (query: ConversationQuery) => Promise<ConversationPage>;

/**
 * Answers `GET /v1/conversations/:cid` as one JSON body streamed page by page
 * (`qry.conversation` pages, each below NATS's max_payload): the gateway holds
 * one page at a time however long the conversation is. The body is the
 * ConversationView; its keys come in the order turns, messages, steers.
 *
 * The first page is read before anything is written, so `not_found` and
 * `unavailable` get the usual error answer. A page that fails later can no
 * longer change the status: the response is aborted, and the client sees a
 * body cut short (invalid JSON), never a complete-looking partial one.
 */
export async function streamConversation(read: PageReader, query: ConversationQuery, res: HttpResponse, onAbort: (err: unknown) => void): Promise<void> {
  let page = await read(query);
  res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
  const out = new SectionWriter(res);
  try {
    await out.write(`{"id":${JSON.stringify(page.id)},"createdAt":${JSON.stringify(page.createdAt)}`);
    for (;;) {
      for (const section of CONVERSATION_SECTIONS) for (const item of page[section]) await out.item(section, item);
      if (!page.next || res.destroyed) break;
      page = await read({ ...query, from: page.next });
    }
    await out.end();
  } catch (err) {
    onAbort(err);
    res.destroy(err as Error);
  }
}

/** Writes the three arrays in order, opening each on its first item and any skipped one empty. */
class SectionWriter {
  private open = -1;
  private first = true;

  constructor(private readonly res: HttpResponse) {}

  async item(section: ConversationSection, item: unknown): Promise<void> {
    await this.openUpTo(CONVERSATION_SECTIONS.indexOf(section));
    await this.write((this.first ? '' : ',') + JSON.stringify(item));
    this.first = false;
  }

  async end(): Promise<void> {
    await this.openUpTo(CONVERSATION_SECTIONS.length - 1);
    await this.write(']}');
    this.res.end();
  }

  private async openUpTo(index: number): Promise<void> {
    while (this.open < index) {
      this.open++;
      await this.write(`${this.open === 0 ? '' : ']'},"${CONVERSATION_SECTIONS[this.open]}":[`);
      this.first = true;
    }
  }

  async write(chunk: string): Promise<void> {
    if (this.res.destroyed) throw new Error('the client went away');
    if (!this.res.write(chunk)) await drained(this.res);
  }
}

/** Waits for room in the socket's buffer, or for the client to leave; no listener outlives the wait. */
function drained(res: HttpResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
