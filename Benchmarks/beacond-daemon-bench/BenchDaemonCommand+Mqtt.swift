import BenchmarkResults

extension BenchDaemonCommand {
    /// The `mqtt` run (`MqttBench`): its phases, the on/off figures under `mqtt.*`, and issue 16's goals.
    /// Without mosquitto it prints why it is skipped and records nothing.
    func runMqtt(figures: inout BenchmarkResults, missed: inout [String]) throws {
        let threads = readerThreads == 0 ? subscribers : readerThreads
        let seconds = min(duration, MqttBench.maxPhaseSeconds)
        guard
            let result = try MqttBench.run(
                subscribers: subscribers, rate: rate, seconds: seconds, rounds: mqttRounds, readerThreads: threads)
        else {
            print(
                """
                mqtt      skipped: no mosquitto broker (looked for \(BenchBroker.candidates.joined(separator: ", "))); \
                `make deps` installs it
                """)
            return
        }
        print(
            """
            mqtt      \(result.subscribers) subscribers (read by \(result.readerThreads) threads), \(result.rate) \
            reports/s of which 1 state change per ms, rounds of MQTT off then on: \(mqttRounds), \
            \(format(seconds, decimals: 1)) s each; CPU counted: the process minus the subscriber readers and the \
            broker watcher
            """)
        for phase in result.phases {
            let observed = "\(phase.observed)/\(phase.changes * phase.subscribers)"
            print(
                """
                          \(phase.mqtt ? "on " : "off") CPU \(format(phase.cpu, decimals: 2)) % (loop \
                \(phase.loopCPU.map { format($0, decimals: 2) } ?? "?") %, MQTT threads \
                \(format(phase.mqttThreadsCPU, decimals: 2)) %, loop in MQTT hooks \
                \(format(phase.loopHookCPU, decimals: 2)) %; readers \(format(phase.readersCPU, decimals: 1)) %, \
                broker \(phase.brokerCPU.map { format($0, decimals: 2) } ?? "?") %), \(phase.changes) changes, \
                \(observed) reads, socket coalesced \(phase.socketCoalesced)
                """)
            print("              last subscriber per change: \(phase.delivery.lastSubscriber?.line ?? "-")")
            if let status = phase.status {
                print(
                    """
                                  MQTT: \(status.publishedStates) states handed to libmosquitto \
                    (\(format(Double(status.publishedStates) / phase.seconds, decimals: 0))/s), \
                    \(status.coalescedStates) coalesced, \(phase.received) received by the watcher, \
                    \(status.publishedSightings) sightings; last state at the broker: \(phase.delivered ? "yes" : "NO")
                    """)
            }
        }
        print(
            """
                      MQTT on − off (medians): CPU \(format(result.addedCPU, decimals: 2)) % of one core \
            (off rounds' spread \(format(result.cpuNoise, decimals: 2)) %); MQTT's own: threads \
            \(format(MqttBench.Result.mean(result.on.map(\.mqttThreadsCPU)), decimals: 2)) % + loop hooks \
            \(format(result.loopHookCPU, decimals: 2)) % = \(format(result.attributedCPU, decimals: 2)) %; \
            last-subscriber p99 \
            \(format(result.onP99, decimals: 3)) ms on, \(format(result.offP99, decimals: 3)) ms off (off rounds' \
            spread \(format(result.noise, decimals: 3)) ms)
            """)
        for (name, phases) in [("off", result.off), ("on", result.on)] {
            figures.record("mqtt.\(name).cpu", MqttBench.Result.median(phases.map(\.cpu)), unit: "%")
            figures.record(
                "mqtt.\(name).last_subscriber.p99", MqttBench.Result.mean(MqttBench.Result.p99s(phases)), unit: "ms")
        }
        figures.record("mqtt.added_cpu", result.addedCPU, unit: "%")
        figures.record("mqtt.off.cpu_noise", result.cpuNoise, unit: "%")
        figures.record("mqtt.attributed_cpu", result.attributedCPU, unit: "%")
        figures.record("mqtt.loop_hook_cpu", result.loopHookCPU, unit: "%")
        figures.record("mqtt.off.p99_noise", result.noise, unit: "ms")
        let sent = result.on.compactMap(\.status).map(\.publishedStates).reduce(0, +)
        let onSeconds = result.on.map(\.seconds).reduce(0, +)
        figures.record("mqtt.on.states_per_second", onSeconds > 0 ? Double(sent) / onSeconds : .nan, unit: "1/s")
        figures.record(
            "mqtt.on.coalesced_states", Double(result.on.compactMap(\.status).map(\.coalescedStates).reduce(0, +)),
            unit: "states")
        if !result.delivered { missed.append("mqtt delivery") }
        SpeedGoal.mqttCPU(
            addedPercent: result.addedCPU, attributedPercent: result.attributedCPU, delivered: result.delivered
        )?.report(
            into: &figures, missed: &missed)
        SpeedGoal.mqttLatency(
            onMillis: result.onP99, offMillis: result.offP99, noiseMillis: result.noise, delivered: result.delivered)?
            .report(into: &figures, missed: &missed)
    }
}
