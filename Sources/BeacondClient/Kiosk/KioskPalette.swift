/// The kiosk's colours, one table for the terminal and the browser: each flag's background and
/// letter colour as 24-bit RGB, the nearest xterm-256 index, and the 16-colour SGR codes a Linux
/// console understands (there amber and yellow are one colour: the letters tell them apart).
package struct KioskColors: Hashable, Sendable {
    package struct RGB: Hashable, Sendable {
        package var red, green, blue: UInt8

        /// `#rrggbb`, for CSS.
        package var hex: String {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = [UInt8(ascii: "#")]
            for component in [red, green, blue] {
                text.append(digits[Int(component >> 4)])
                text.append(digits[Int(component & 0x0F)])
            }
            return String(decoding: text, as: UTF8.self)
        }
    }

    package var background: RGB
    package var foreground: RGB
    /// xterm-256 colour indices.
    package var background256: UInt8
    package var foreground256: UInt8
    /// SGR parameters for 8/16-colour terminals: 40–47 for the background, 30–37 for the letters.
    package var background16: UInt8
    package var foreground16: UInt8

    /// The colours of `flag`; `alternate` is the evacuation flash's second phase (white).
    package static func of(_ flag: KioskView.Flag, alternate: Bool = false) -> KioskColors {
        switch flag {
        case .green: green
        case .yellow: yellow
        case .vsc, .safetyCar: amber
        case .red: red
        case .evacuation: alternate ? white : red
        case .noSignal: grey
        }
    }

    static let black = RGB(red: 0, green: 0, blue: 0)
    static let whiteRGB = RGB(red: 255, green: 255, blue: 255)

    static let green = KioskColors(
        background: RGB(red: 0, green: 150, blue: 57), foreground: whiteRGB, background256: 28, foreground256: 231,
        background16: 42, foreground16: 37)
    static let yellow = KioskColors(
        background: RGB(red: 255, green: 214, blue: 0), foreground: black, background256: 220, foreground256: 16,
        background16: 43, foreground16: 30)
    static let amber = KioskColors(
        background: RGB(red: 255, green: 130, blue: 0), foreground: black, background256: 208, foreground256: 16,
        background16: 43, foreground16: 30)
    static let red = KioskColors(
        background: RGB(red: 210, green: 0, blue: 0), foreground: whiteRGB, background256: 160, foreground256: 231,
        background16: 41, foreground16: 37)
    static let white = KioskColors(
        background: whiteRGB, foreground: RGB(red: 210, green: 0, blue: 0), background256: 231, foreground256: 160,
        background16: 47, foreground16: 31)
    static let grey = KioskColors(
        background: RGB(red: 90, green: 90, blue: 90), foreground: whiteRGB, background256: 240, foreground256: 231,
        background16: 47, foreground16: 30)
}
