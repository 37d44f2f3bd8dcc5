import { useCallback, useId, useLayoutEffect, useRef, useState, type ReactNode } from 'react';

export interface ConfirmRequest {
  /** The question, as the dialog's title: "Move "a.csv" to the trash?". */
  title: string;
  /** What follows, if anything ("This cannot be undone."). */
  detail?: string;
  /** The button that does it: "Move to trash", "Purge", "Revoke". */
  action: string;
}

interface Pending extends ConfirmRequest {
  resolve: (yes: boolean) => void;
}

/**
 * A confirmation as a modal `<dialog>` (the browser's own: the rest of the page inert, focus kept
 * inside, Escape cancels, focus back where it was after). `confirm(request)` opens it and resolves
 * to whether the person chose the action; the returned element must be rendered by the caller.
 */
export function useConfirm(): [(request: ConfirmRequest) => Promise<boolean>, ReactNode] {
  const [pending, setPending] = useState<Pending | null>(null);
  const confirm = useCallback(
    (request: ConfirmRequest) =>
      new Promise<boolean>((resolve) => {
        setPending({ ...request, resolve });
      }),
    [],
  );
  const finish = useCallback(
    (yes: boolean) => {
      pending?.resolve(yes);
      setPending(null);
    },
    [pending],
  );
  return [confirm, pending && <ConfirmDialog key={pending.title} request={pending} onDone={finish} />];
}

function ConfirmDialog({ request, onDone }: { request: ConfirmRequest; onDone: (yes: boolean) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  // A layout effect, so the dialog closes (and the browser gives focus back) before React removes it;
  // the element that had focus gets it back explicitly too, in case it was drawn again meanwhile.
  useLayoutEffect(() => {
    const dialog = ref.current;
    const opener = document.activeElement;
    if (dialog && !dialog.open) dialog.showModal?.();
    return () => {
      dialog?.close?.();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      role="alertdialog"
      className="dialog"
      aria-labelledby={`${id}-title`}
      aria-describedby={request.detail ? `${id}-detail` : undefined}
      // Escape, or the dialog closed any other way: no.
      onCancel={(e) => {
        e.preventDefault();
        onDone(false);
      }}
    >
      <h2 id={`${id}-title`}>{request.title}</h2>
      {request.detail && <p id={`${id}-detail`}>{request.detail}</p>}
      <div className="dialog-buttons">
        {/* Cancel first and focused: a stray Enter does nothing that cannot be undone. */}
        <button type="button" autoFocus onClick={() => onDone(false)}>
          Cancel
        </button>
        <button type="button" className="danger" onClick={() => onDone(true)}>
          {request.action}
        </button>
      </div>
    </dialog>
  );
}
