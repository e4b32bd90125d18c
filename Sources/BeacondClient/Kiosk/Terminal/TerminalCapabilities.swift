/// What the kiosk's terminal can show: how many colours, or none.
///
/// Detected from the environment the way terminal programs usually do: `COLORTERM=truecolor` or
/// `24bit` means 24-bit colour, a `TERM` containing `256color` means the xterm-256 palette, any
/// other terminal gets the 8 basic colours (a Linux console: `TERM=linux`). `NO_COLOR` (set and
/// not empty, https://no-color.org) or `TERM=dumb` turn colours off: the frame then holds no
/// colour escape at all. `--colors` overrides the detection.
package struct TerminalCapabilities: Hashable, Sendable {
    package enum Colors: String, Hashable, Sendable, CaseIterable {
        case truecolor
        case xterm256 = "256"
        case ansi16 = "16"
        case none
    }

    /// The `--colors` choice: `auto` detects, the others force that depth.
    package enum Choice: String, Hashable, Sendable, CaseIterable {
        case auto, truecolor
        case xterm256 = "256"
        case ansi16 = "16"
        case none
    }

    package var colors: Colors

    package init(colors: Colors) {
        self.colors = colors
    }

    /// The capabilities for `choice` in `environment` (the process's variables).
    package static func detect(environment: [String: String], choice: Choice = .auto) -> TerminalCapabilities {
        switch choice {
        case .truecolor: return TerminalCapabilities(colors: .truecolor)
        case .xterm256: return TerminalCapabilities(colors: .xterm256)
        case .ansi16: return TerminalCapabilities(colors: .ansi16)
        case .none: return TerminalCapabilities(colors: .none)
        case .auto: break
        }
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return TerminalCapabilities(colors: .none) }
        let term = environment["TERM"] ?? ""
        if term == "dumb" { return TerminalCapabilities(colors: .none) }
        switch environment["COLORTERM"]?.lowercased() {
        case "truecolor", "24bit": return TerminalCapabilities(colors: .truecolor)
        default: break
        }
        if term.contains("256color") { return TerminalCapabilities(colors: .xterm256) }
        return TerminalCapabilities(colors: .ansi16)
    }

    /// The SGR sequence that sets `colors` for the text and the background; empty without colours.
    /// It starts with a reset, so no attribute left over from before the frame survives.
    package func sgr(_ palette: KioskColors) -> String {
        switch self.colors {
        case .truecolor:
            let fg = palette.foreground
            let bg = palette.background
            return "\u{1B}[0m\u{1B}[38;2;\(fg.red);\(fg.green);\(fg.blue)m\u{1B}[48;2;\(bg.red);\(bg.green);\(bg.blue)m"
        case .xterm256:
            return "\u{1B}[0m\u{1B}[38;5;\(palette.foreground256)m\u{1B}[48;5;\(palette.background256)m"
        case .ansi16:
            return "\u{1B}[0m\u{1B}[\(palette.foreground16)m\u{1B}[\(palette.background16)m"
        case .none:
            return ""
        }
    }
}
