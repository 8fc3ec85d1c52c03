// The declaration in include/ is all this module provides; libFuzzer defines the function.
