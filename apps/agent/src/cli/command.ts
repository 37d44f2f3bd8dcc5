import { InvalidArgumentError, type Command } from 'commander';
import { CliContext, type CliIO, type GlobalOptions } from './context';

/**
 * Wraps a command handler for commander: builds the command's context from the global options
 * and passes the declared arguments and the command's own options, typed by the handler.
 */
export function action<A extends unknown[], O extends object>(
  io: CliIO,
  handler: (ctx: CliContext, options: O, ...args: A) => Promise<void>,
): (...params: unknown[]) => Promise<void> {
  return async (...params: unknown[]) => {
    const command = params[params.length - 1] as Command;
    const args = params.slice(0, -2) as A;
    const ctx = new CliContext(io, command.optsWithGlobals<GlobalOptions>());
    await handler(ctx, command.opts<O>(), ...args);
  };
}

/** An integer option parser with bounds; a bad value is a usage error (exit 2). */
export function intArg(name: string, min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    }
    return n;
  };
}

/** A choice option parser. */
export function choiceArg<T extends string>(name: string, choices: readonly T[]): (value: string) => T {
  return (value: string) => {
    if (!(choices as readonly string[]).includes(value)) {
      throw new InvalidArgumentError(`${name} must be one of ${choices.join(', ')}`);
    }
    return value as T;
  };
}
