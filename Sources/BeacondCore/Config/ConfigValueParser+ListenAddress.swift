extension ConfigValueParser {
    /// `metrics.listen` (`--metrics`): `ADDR:PORT`, by the web kiosk's address rules (`127.0.0.1:9464`,
    /// `[::1]:9464`, `localhost:9464`, `0.0.0.0:9464`; port 0 picks a free one). Host names other than
    /// localhost are refused rather than resolved: the daemon never waits on DNS to start.
    static func listenAddress(_ value: RawConfigValue) throws(ConfigValueProblem) -> WebKioskAddress {
        let text = try string(value, expected: "an address like 127.0.0.1:9464")
        do throws(WebKioskAddress.ParseError) {
            return try WebKioskAddress(parsing: text)
        } catch {
            let reason =
                switch error {
                case .missingPort: "\(quoted(text)) has no port: give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464"
                case .badPort: "\(quoted(text)): the port must be a number from 0 to 65535"
                case .badHost:
                    "\(quoted(text)): the address must be an IPv4 address, a bracketed IPv6 address or localhost"
                }
            throw ConfigValueProblem(reason, at: value)
        }
    }
}
