import { CONVERSATION_SECTIONS, type ConversationQuery, type ConversationSection } from '@steerline/contracts';
import type { HttpResponse } from '../http/http.types';
import { drained } from '../http/drained';
import type { ReadPage } from '../nats/read-models.client';

/** Reads one page; `at`: the subject the page before named for it (CONVERSATION_PAGE_AT_HEADER). */
export type PageReader = (query: ConversationQuery, at?: string) => Promise<ReadPage>;

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
    const head = 'layout' in page ? page.layout : page.page;
    out.write(`{"id":${JSON.stringify(head.id)},"createdAt":${JSON.stringify(head.createdAt)}`);
    for (;;) {
      const next = out.page(page);
      // One socket write per page, not per item; a slow client holds the next page back.
      await out.flush();
      if (!next) break;
      page = await read({ ...query, from: next }, 'at' in page ? page.at : undefined);
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
  private pending: (string | Uint8Array)[] = [];

  constructor(private readonly res: HttpResponse) {}

  /** Writes a page's items; returns where the next page starts. A laid-out page's items are its reply's own bytes, not parsed or encoded again. */
  page(read: ReadPage): ConversationQuery['from'] {
    if ('page' in read) {
      for (const section of CONVERSATION_SECTIONS) for (const item of read.page[section]) this.items(section, JSON.stringify(item));
      return read.page.next;
    }
    for (const section of CONVERSATION_SECTIONS) {
      const range = read.layout.sections[section];
      if (range) this.items(section, read.body.subarray(range[0], range[1]));
    }
    return read.layout.next;
  }

  /** One item's JSON, or several items' JSON joined by commas. */
  private items(section: ConversationSection, json: string | Uint8Array): void {
    this.openUpTo(CONVERSATION_SECTIONS.indexOf(section));
    if (!this.first) this.write(',');
    this.write(json);
    this.first = false;
  }

  async end(): Promise<void> {
    this.openUpTo(CONVERSATION_SECTIONS.length - 1);
    this.write(']}');
    await this.flush();
    this.res.end();
  }

  write(chunk: string | Uint8Array): void {
    this.pending.push(chunk);
  }

  async flush(): Promise<void> {
    if (this.res.destroyed) throw new Error('the client went away');
    const pieces = this.pending;
    this.pending = [];
    // The reply's own bytes are written as they are (a copy of each page into one buffer cost more in garbage collection than it saved in writes).
    let full = false;
    for (const piece of pieces) if (piece.length) full = !this.res.write(piece) || full;
    if (full) await drained(this.res);
  }

  private openUpTo(index: number): void {
    while (this.open < index) {
      this.open++;
      this.write(`${this.open === 0 ? '' : ']'},"${CONVERSATION_SECTIONS[this.open]}":[`);
      this.first = true;
    }
  }
}
