import Glibc

/// The terminal the kiosk draws on: switches to the alternate screen with the cursor hidden,
/// line wrapping and echo off, reads the size, writes whole frames, and puts everything back.
///
/// `restore()` is idempotent and is called on every way out (a quit signal, an error, the end of
/// the loop); it writes the reset in one piece and ignores errors, as the terminal may be gone.
package final class KioskTerminal {
    package struct WriteError: Error, CustomStringConvertible {
        package let code: Int32
        package var description: String { "cannot write to the terminal: \(errnoText(code))" }
    }

    /// Columns and rows used when the output is not a terminal or reports no size.
    package static let fallbackSize = (columns: 80, rows: 24)
    /// The longest wait for a terminal that does not take output (a stopped tty), milliseconds.
    static let stalledWriteLimit: Int32 = 2000

    static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[?7l\u{1B}[H"
    static let restoreColorsSequence = "\u{1B}[0m"
    static let restoreScreenSequence = "\u{1B}[?7h\u{1B}[?25h\u{1B}[?1049l"

    private let output: Int32
    private let input: Int32
    private let resetsColors: Bool
    private var savedInput: termios?
    private var entered = false

    /// `resetsColors`: false when the kiosk draws without colours, so not even a reset is written.
    package init(output: Int32 = STDOUT_FILENO, input: Int32 = STDIN_FILENO, resetsColors: Bool = true) {
        self.output = output
        self.input = input
        self.resetsColors = resetsColors
    }

    deinit { restore() }

    /// Takes the terminal: alternate screen, hidden cursor, no wrapping; echo and line editing off
    /// when the input is a terminal, so keys pressed at the kiosk do not draw over the flag.
    package func enter() throws(WriteError) {
        var settings = termios()
        if isatty(input) == 1, tcgetattr(input, &settings) == 0 {
            savedInput = settings
            settings.c_lflag &= ~tcflag_t(ECHO | ICANON)
            _ = tcsetattr(input, TCSANOW, &settings)
        }
        entered = true
        try write(Array(Self.enterSequence.utf8))
    }

    /// Gives the terminal back: colours reset, wrapping and cursor on, main screen, input settings.
    package func restore() {
        guard entered else { return }
        entered = false
        let sequence = (resetsColors ? Self.restoreColorsSequence : "") + Self.restoreScreenSequence
        try? write(Array(sequence.utf8))
        if var settings = savedInput {
            _ = tcsetattr(input, TCSANOW, &settings)
            savedInput = nil
        }
    }

    /// The terminal's size from TIOCGWINSZ; `fallbackSize` when there is none.
    package func size() -> (columns: Int, rows: Int) {
        var window = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 else {
            return Self.fallbackSize
        }
        return (Int(window.ws_col), Int(window.ws_row))
    }

    /// Writes all of `bytes`, retrying interrupted and partial writes. A terminal that takes
    /// nothing for `stalledWriteLimit` loses the rest of this frame (the next one repaints all).
    package func write(_ bytes: [UInt8]) throws(WriteError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(output, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if written > 0 {
                offset += written
                continue
            }
            let code = written < 0 ? errno : EIO
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                var ready = pollfd(fd: output, events: Int16(POLLOUT), revents: 0)
                if poll(&ready, 1, Self.stalledWriteLimit) > 0 { continue }
                return
            }
            throw WriteError(code: code)
        }
    }
}
