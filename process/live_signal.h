/* Resuming the threads corestack stopped when a signal would kill it
 * (part of the live target, live.c).
 *
 * While any attachment holds stopped threads, SIGINT, SIGTERM and SIGHUP
 * run a handler that detaches them with async-signal-safe calls only, then
 * lets the previous disposition have the signal. The handler finds the
 * threads in slots, one per seized thread, shared by every attachment of
 * the process: a slot is free, holds a thread that is seized but not in a
 * stop we took (the handler leaves it alone: if we die, the kernel detaches
 * it the right way, keeping its pending signal or group-stop), or holds a
 * thread stopped by us (armed: the handler detaches it, giving back the
 * signal it stopped with). There are CS_LIVE_MAX_THREADS slots.
 *
 * Only the thread that attached calls these. */
#ifndef CS_CORESTACK_LIVE_SIGNAL_H
#define CS_CORESTACK_LIVE_SIGNAL_H

/* Counted: the handlers stay until the last user uninstalls. */
void cs_live_sig_install(void);
void cs_live_sig_uninstall(void);

/* A slot for tid, disarmed; -1 if none is free. */
int cs_live_sig_slot_take(int tid);
/* Free the slot again (if it still holds tid). */
void cs_live_sig_slot_free(int slot, int tid);
/* tid is stopped by us: the handler may detach it with resig. */
void cs_live_sig_slot_arm(int slot, int tid, int resig);
/* tid is about to leave our stop: the handler must leave it alone. */
void cs_live_sig_slot_disarm(int slot, int tid);
/* The handler has detached the thread of this slot (it frees the slot
 * when it did). */
int cs_live_sig_slot_released(int slot);

#endif
