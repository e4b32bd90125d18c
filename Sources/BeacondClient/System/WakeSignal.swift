import CLinux
import Glibc

/// An eventfd another thread writes to wake a thread blocked in poll(2): the HCI scanner's reader at
/// shutdown (it stays readable once signalled), the MQTT network thread when work is handed over
/// (it drains it on each wake-up), and every blocking loop's stop (docs/threads.md): a loop that
/// waits for a time waits on this descriptor (`wait(micros:)`), never in a sleep.
package final class WakeSignal: Sendable {
    /// eventfd(2) failed, with this error number.
    package struct Failure: Error {
        package let errno: Int32
    }

    package let descriptor: Int32

    package init() throws(Failure) {
        let descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard descriptor >= 0 else { throw Failure(errno: errno) }
        self.descriptor = descriptor
    }

    deinit { _ = Glibc.close(descriptor) }

    package func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(descriptor, $0.baseAddress, 8) }
    }

    /// Makes it unreadable again (one read resets an eventfd's counter).
    package func drain() {
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { Glibc.read(descriptor, $0.baseAddress, 8) }
    }

    /// Waits until signalled or `micros` µs have passed; true when signalled. The signal stays set
    /// (a stop stays a stop) until `drain()`. `interrupted` is told of each EINTR.
    @discardableResult
    package func wait(micros: Int64, interrupted: () -> Void = {}) -> Bool {
        let deadline = MonotonicClock.micros() &+ max(0, micros)
        while true {
            let remaining = deadline - MonotonicClock.micros()
            var probe = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&probe, 1, remaining > 0 ? Int32(clamping: (remaining + 999) / 1000) : 0)
            if ready > 0 { return true }
            if ready == 0, remaining <= 0 { return false }
            if ready < 0 {
                guard errno == EINTR else { return false }
                interrupted()
            }
        }
    }

    package var isSignalled: Bool {
        var probe = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&probe, 1, 0) > 0
    }
}
