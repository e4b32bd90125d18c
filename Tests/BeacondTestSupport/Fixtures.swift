/// Inputs several test targets share.
package enum SharedFixtures {
    /// A YAML "billion laughs": nested aliases inside a list value, a few hundred bytes that would
    /// expand to 9^9 strings. The loader must refuse it at the first anchor (line 1, column 4).
    package static let billionLaughs = """
        a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
        b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
        c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
        d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
        e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
        f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
        g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
        h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
        fusion:
          allow: [*h,*h,*h,*h,*h,*h,*h,*h,*h]

        """
}
