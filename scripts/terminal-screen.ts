/**
 * The demo's terminal: log lines scroll in the upper part of the screen, and
 * the last two rows hold the status line and the input line, each cut to the
 * terminal's width so neither ever wraps. What a person types goes only to
 * the input line (the terminal's own echo is off: raw mode), so a status
 * redraw can never mix with it. The log scrolls inside a scroll region
 * (DECSTBM), so writing a line never moves the two bottom rows. A resize
 * repaints the screen from the lines kept, at the new size.
 */

const ESC = '\x1b[';
const PROMPT = 'steer> ';
/** Lines kept for a repaint after a resize; more than any terminal shows. */
const KEPT = 500;

export interface ScreenIo {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

export class TerminalScreen {
  private status = '';
  private typed = '';
  private readonly kept: string[] = [];
  private started = false;
  private readonly onData = (chunk: Buffer) => this.keys(chunk.toString('utf8'));
  private readonly onResize = () => this.repaint();

  constructor(
    private readonly io: ScreenIo,
    /** A line the person entered (Enter), trimmed and not empty. */
    private readonly submit: (text: string) => void,
  ) {}

  start(): void {
    this.started = true;
    this.io.input.setRawMode(true);
    this.io.input.resume();
    this.io.input.on('data', this.onData);
    this.io.output.on('resize', this.onResize);
    this.repaint();
  }

  /** A log line, above the status line. Raw mode turns off the terminal's \n → \r\n: write both. */
  line(text: string): void {
    for (const part of text.split('\n')) {
      this.kept.push(part);
      if (this.kept.length > KEPT) this.kept.shift();
      if (this.started) this.write(`${ESC}${this.logBottom()};1H\r\n${part}`);
    }
    if (this.started) this.paintFooter();
  }

  setStatus(text: string): void {
    this.status = text;
    if (this.started) this.paintFooter();
  }

  /** Back to a plain terminal: the last status stays as a log line, output scrolls as usual again. */
  stop(): void {
    if (!this.started) return;
    this.started = false;
    this.io.input.off('data', this.onData);
    this.io.output.off('resize', this.onResize);
    this.io.input.setRawMode(false);
    this.io.input.pause();
    const { rows } = this.size();
    this.write(`${ESC}r${ESC}${rows - 1};1H${ESC}2K${ESC}${rows};1H${ESC}2K${ESC}${rows - 1};1H${this.status ? `${cutToWidth(this.status, this.size().columns)}\r\n` : ''}`);
  }

  private keys(chunk: string): void {
    // Escape sequences (arrows, function keys) are not editing commands here: skip them whole.
    const keys = chunk.replace(/\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)?/g, '');
    for (const key of keys) {
      if (key === '\x03') {
        // Ctrl-C: raw mode delivers it as a key, not a signal.
        this.stop();
        process.kill(process.pid, 'SIGINT');
        return;
      }
      if (key === '\r' || key === '\n') {
        const text = this.typed.trim();
        this.typed = '';
        if (text) this.submit(text);
      } else if (key === '\x7f' || key === '\b') this.typed = [...this.typed].slice(0, -1).join('');
      else if (key === '\x15') this.typed = '';
      else if (key >= ' ') this.typed += key;
    }
    this.paintFooter();
  }

  private size(): { rows: number; columns: number } {
    return { rows: Math.max(4, this.io.output.rows || 24), columns: Math.max(12, this.io.output.columns || 80) };
  }

  private logBottom(): number {
    return this.size().rows - 2;
  }

  /** The whole screen at its current size: the scroll region, the lines kept that fit, the footer. */
  private repaint(): void {
    if (!this.started) return;
    const { rows } = this.size();
    let out = `${ESC}r${ESC}2J${ESC}1;${rows - 2}r`;
    for (const part of this.kept.slice(-(rows - 2))) out += `${ESC}${rows - 2};1H\r\n${part}`;
    this.write(out);
    this.paintFooter();
  }

  /** Status and input rows, cut to the width; the cursor ends where the next typed key shows. */
  private paintFooter(): void {
    const { rows, columns } = this.size();
    const room = columns - PROMPT.length - 1;
    const chars = [...this.typed];
    const shown = chars.length > room ? `…${chars.slice(-(room - 1)).join('')}` : this.typed;
    this.write(`${ESC}${rows - 1};1H${ESC}2K${cutToWidth(this.status, columns)}${ESC}${rows};1H${ESC}2K${PROMPT}${shown}`);
  }

  private write(text: string): void {
    this.io.output.write(text);
  }
}

/** Cut to the width, leaving the last column free so no terminal wraps the row. */
export function cutToWidth(text: string, columns: number): string {
  const chars = [...text];
  return chars.length < columns ? text : `${chars.slice(0, columns - 2).join('')}…`;
}
