"""What TVM 0.27 raises through its FFI.

There is no ``tvm.TVMError`` any more: the C++ error kinds arrive as these built-in types
(``tvm.error.InternalError`` is a RuntimeError). Catch ``TVM_ERRORS`` where TVM may reject a
schedule, and nothing broader.
"""

TVM_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, KeyError)
