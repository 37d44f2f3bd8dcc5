import { Presets, SingleBar } from 'cli-progress';
import type { TransferJournal } from '../transfers/transfer-records';
import { formatSize } from './output';
import type { OutputStream } from './output';

/**
 * Counts files and bytes of one command's transfers: drives the progress bar (only on a terminal)
 * and the transfer records the local UI reads.
 */
export class TransferTracker {
  filesTotal = 0;
  filesDone = 0;
  filesSkipped = 0;
  bytesTotal = 0;
  bytesDone = 0;
  private readonly started = performance.now();
  private bar: SingleBar | undefined;

  constructor(
    private readonly stderr: OutputStream,
    private readonly showBar: boolean,
    private readonly journal?: TransferJournal,
    /** Messages for people (staging); silenced by --quiet and --json. */
    private readonly note: (text: string) => void = () => undefined,
  ) {}

  /**
   * An object the site is staging from a compound resource's archive before it can be read
   * (docs/storage.md): "staging" with its progress, once per change.
   */
  staging(objectPath: string, staged: number, total: number): void {
    const percent = total > 0 ? Math.floor((100 * staged) / total) : 0;
    const line = `staging ${objectPath} from the archive: ${percent}% (${formatSize(staged)} of ${formatSize(total)})`;
    if (line === this.lastStaging) return;
    this.lastStaging = line;
    this.bar?.stop();
    this.bar = undefined;
    this.note(line);
  }

  private lastStaging: string | undefined;

  plan(files: number, bytes: number): void {
    this.filesTotal += files;
    this.bytesTotal += bytes;
    if (this.showBar && !this.bar && this.filesTotal > 0) {
      this.bar = new SingleBar(
        {
          stream: this.stderr as unknown as NodeJS.WritableStream,
          format: '{bar} {percentage}% | {files} files | {done} of {all} | {speed}',
          hideCursor: true,
          barsize: 30,
          etaBuffer: 50,
        },
        Presets.shades_classic,
      );
      this.bar.start(Math.max(1, this.bytesTotal), 0, this.payload());
    } else {
      this.bar?.setTotal(Math.max(1, this.bytesTotal));
    }
    this.report();
  }

  bytes(delta: number): void {
    this.bytesDone += delta;
    this.report();
  }

  fileDone(skipped = false): void {
    this.filesDone++;
    if (skipped) this.filesSkipped++;
    this.report();
  }

  bytesPerSecond(): number {
    const seconds = (performance.now() - this.started) / 1000;
    return seconds > 0 ? this.bytesDone / seconds : 0;
  }

  elapsedSeconds(): number {
    return (performance.now() - this.started) / 1000;
  }

  stop(): void {
    if (this.bar) {
      this.bar.update(this.bytesDone, this.payload());
      this.bar.stop();
      this.bar = undefined;
    }
  }

  private payload(): Record<string, string> {
    return {
      files: `${this.filesDone}/${this.filesTotal}`,
      done: formatSize(this.bytesDone),
      all: formatSize(this.bytesTotal),
      speed: `${formatSize(this.bytesPerSecond())}/s`,
    };
  }

  private report(): void {
    this.bar?.update(this.bytesDone, this.payload());
    this.journal?.update({
      filesTotal: this.filesTotal,
      filesDone: this.filesDone,
      bytesTotal: this.bytesTotal,
      bytesDone: this.bytesDone,
      bytesPerSecond: Math.round(this.bytesPerSecond()),
    });
  }
}
