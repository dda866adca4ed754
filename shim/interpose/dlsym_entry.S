/* dlsym_entry.S: the shim's exported dlsym (x86-64 SysV).
 * glibc resolves dlsym(RTLD_NEXT, ...) relative to the return address of its caller, so a C
 * wrapper calling the real dlsym would make every RTLD_NEXT lookup resolve relative to the shim.
 * This entry asks pinshim_dlsym_wrapped_index(name) whether the name is one the shim wraps; if not,
 * it tail-jumps to the real dlsym with the caller's frame and return address untouched. If so, it
 * tail-jumps to pinshim_dlsym_answer(handle, name, index).
 * RTLD_NEXT lookups are never answered by the shim: that is how another interposer finds the
 * definition after its own, and only the real dlsym knows who "the caller" is. */
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp                    /* 16-byte alignment for the call */
    .cfi_adjust_cfa_offset 8
    call    pinshim_dlsym_wrapped_index /* int (void *handle, const char *name): -1 = not ours */
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testl   %eax, %eax
    jns     1f
    jmpq    *pinshim_real_dlsym(%rip)
1:
    movl    %eax, %edx
    jmp     pinshim_dlsym_answer
    .cfi_endproc
    .size   dlsym, .-dlsym

    .section .note.GNU-stack,"",@progbits
