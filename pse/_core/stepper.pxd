# Steppers: thin Python values around one parser state (see structure.pxd).

from pse._core.structure cimport CompiledStructure, PState


cdef class Stepper:
    cdef readonly CompiledStructure structure
    cdef PState state
    cdef readonly bytes remaining_input
    cdef object history       # None, or (earlier history, bytes consumed by one call)

    @staticmethod
    cdef Stepper make(CompiledStructure structure, PState state, object history, bytes remaining)
    cdef StepperDelta _delta(self, PState state, bytes consumed, bytes remaining)


cdef class StepperDelta:
    cdef readonly Stepper stepper
    cdef readonly bytes token
    cdef readonly bint was_healed
