import Glibc

/// A POSIX thread running one closure. Loops that block in poll(2) (a scanner's reader, the
/// benchmarks' producers and readers) run on threads of their own, never on Swift concurrency's
/// cooperative ones.
// @unchecked Sendable: `joined` is touched only by the thread that started it and joins it.
package final class PosixThread: @unchecked Sendable {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    package let handle: pthread_t
    private var joined = false

    private init(handle: pthread_t) {
        self.handle = handle
    }

    /// pthread_create failed, with this error number.
    package struct StartError: Error, CustomStringConvertible {
        package let code: Int32
        package var description: String { "cannot start a thread: \(errnoText(code))" }
    }

    /// Starts `body` on a new thread. `detached`: nobody joins it and its resources go when it ends.
    package static func start(detached: Bool, _ body: @escaping @Sendable () -> Void) throws(StartError) -> PosixThread
    {
        var handle = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let result = pthread_create(
            &handle, nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
                return nil
            }, box)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw StartError(code: result)
        }
        let thread = PosixThread(handle: handle)
        if detached {
            pthread_detach(handle)
            thread.joined = true
        }
        return thread
    }

    /// Waits for a joinable thread to end (which orders its writes before the caller's reads).
    package func join() {
        guard !joined else { return }
        joined = true
        pthread_join(handle, nil)
    }
}
