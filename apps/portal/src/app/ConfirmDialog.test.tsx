// @vitest-environment happy-dom
import { cleanup, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useConfirm } from './ConfirmDialog';

function Asker({ onAnswer }: { onAnswer: (yes: boolean) => void }) {
  const [confirm, confirmation] = useConfirm();
  return (
    <>
      <button
        type="button"
        onClick={() =>
          void confirm({ title: 'Purge a.csv?', detail: 'This cannot be undone.', action: 'Purge' }).then(
            onAnswer,
          )
        }
      >
        Ask
      </button>
      {confirmation}
    </>
  );
}

afterEach(cleanup);

describe('useConfirm', () => {
  it('asks in an alert dialog named by its question, Cancel focused; the action answers yes', async () => {
    const user = userEvent.setup();
    const onAnswer = vi.fn();
    render(<Asker onAnswer={onAnswer} />);
    expect(screen.queryByRole('alertdialog')).toBeNull();
    await user.click(screen.getByRole('button', { name: 'Ask' }));
    const dialog = screen.getByRole('alertdialog', { name: 'Purge a.csv?' });
    expect(dialog.getAttribute('aria-describedby')).toBeTruthy();
    expect(document.getElementById(dialog.getAttribute('aria-describedby')!)?.textContent).toBe(
      'This cannot be undone.',
    );
    expect(document.activeElement?.textContent).toBe('Cancel');
    await user.click(screen.getByRole('button', { name: 'Purge' }));
    expect(onAnswer).toHaveBeenCalledWith(true);
    expect(screen.queryByRole('alertdialog')).toBeNull();
  });

  it('answers no to Cancel and to the dialog being cancelled (Escape)', async () => {
    const user = userEvent.setup();
    const onAnswer = vi.fn();
    render(<Asker onAnswer={onAnswer} />);
    await user.click(screen.getByRole('button', { name: 'Ask' }));
    await user.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(onAnswer).toHaveBeenLastCalledWith(false);
    await user.click(screen.getByRole('button', { name: 'Ask' }));
    screen.getByRole('alertdialog').dispatchEvent(new Event('cancel', { cancelable: true }));
    await vi.waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull());
    expect(onAnswer).toHaveBeenCalledTimes(2);
    expect(onAnswer).toHaveBeenLastCalledWith(false);
  });
});
