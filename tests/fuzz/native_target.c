/* The process whose core seeds fuzz_native: a static program without libc
 * whose call chain has the shapes corestack's --native merges — two
 * interpreter loops (vm_exec_core), a C method called from one
 * (vm_call_cfunc_with_frame -> nt_cfunc) that calls back into Ruby
 * (rb_yield), and an inlined call at the innermost frame — parked in
 * pause() so gcore can take it. Built and cored by make fuzz-seeds. */
#define NOINLINE __attribute__((noinline))

static inline __attribute__((always_inline)) void park(void)
{
	for (;;)
		__asm__ volatile("syscall" : : "a"(34) : "rcx", "r11", "memory");
}

NOINLINE void vm_exec_core(int depth);

NOINLINE void leaf(void) { park(); }

NOINLINE void rb_yield(void) { vm_exec_core(1); }

NOINLINE void nt_cfunc(void) { rb_yield(); }

NOINLINE void vm_call_cfunc_with_frame(void) { nt_cfunc(); }

NOINLINE void vm_exec_core(int depth)
{
	if (depth)
		leaf();
	else
		vm_call_cfunc_with_frame();
}

NOINLINE void vm_exec(void) { vm_exec_core(0); }

void _start(void)
{
	vm_exec();
}
