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
  ) {}

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
