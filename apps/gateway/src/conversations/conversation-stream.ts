import { CONVERSATION_SECTIONS, type ConversationPage, type ConversationQuery, type ConversationSection } from '@steerline/contracts';
import type { HttpResponse } from '../http/http.types';
import { drained } from '../http/drained';

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
    out.write(`{"id":${JSON.stringify(page.id)},"createdAt":${JSON.stringify(page.createdAt)}`);
    for (;;) {
      for (const section of CONVERSATION_SECTIONS) for (const item of page[section]) out.item(section, item);
      // One socket write per page, not per item; a slow client holds the next page back.
      await out.flush();
      if (!page.next) break;
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
  private pending: string[] = [];

  constructor(private readonly res: HttpResponse) {}

  item(section: ConversationSection, item: unknown): void {
    this.openUpTo(CONVERSATION_SECTIONS.indexOf(section));
    this.write((this.first ? '' : ',') + JSON.stringify(item));
    this.first = false;
  }

  async end(): Promise<void> {
    this.openUpTo(CONVERSATION_SECTIONS.length - 1);
    this.write(']}');
    await this.flush();
    this.res.end();
  }

  write(chunk: string): void {
    this.pending.push(chunk);
  }

  async flush(): Promise<void> {
    if (this.res.destroyed) throw new Error('the client went away');
    const chunk = this.pending.join('');
    this.pending = [];
    if (chunk && !this.res.write(chunk)) await drained(this.res);
  }

  private openUpTo(index: number): void {
    while (this.open < index) {
      this.open++;
      this.write(`${this.open === 0 ? '' : ']'},"${CONVERSATION_SECTIONS[this.open]}":[`);
      this.first = true;
    }
  }
}
