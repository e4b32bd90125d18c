/// The page's inline style and script. Both are constants, never templated: the
/// Content-Security-Policy allows exactly these bytes by their SHA-256 (`styleHash`,
/// `scriptHash`), and WebKioskPageTests recomputes the hashes with `openssl dgst -sha256`.
/// Change a byte here and the hash constants must change with it (the test says which).
///
/// The script paints the view the server put in `<body data-view>` before the first frame, then
/// follows `/events`; when the stream errors or stays silent for 5 s it paints `data-lost` (NO
/// SIGNAL — kiosk server unreachable) and opens the stream again. Text goes in through
/// `textContent` only; colours through CSS custom properties.
enum WebKioskAssets {
    static let style = """
        html,body{margin:0;height:100%;overflow:hidden}
        body{background:var(--bg,#5a5a5a);color:var(--fg,#fff);font-family:"DejaVu Sans",Arial,sans-serif}
        main{position:fixed;inset:0;display:flex;flex-direction:column;align-items:center;justify-content:center;\
        background:var(--bg,#5a5a5a);color:var(--fg,#fff);text-align:center}
        h1{margin:0;font-weight:900;line-height:1;letter-spacing:.02em;white-space:nowrap;\
        font-size:min(calc(112vw / var(--chars,8)),42vh)}
        ul{list-style:none;margin:3vh 0 0;padding:0 2vw;font-size:min(4.5vh,4vw);line-height:1.3}
        li{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;max-width:96vw}
        #status{position:fixed;left:0;right:0;bottom:1vh;margin:0;font-size:min(3vh,3vw);font-weight:bold}
        @keyframes flash{0%,49.9%{background:var(--bg);color:var(--fg)}\
        50%,100%{background:var(--bg2);color:var(--fg2)}}
        body.flash:not(.steady) main{animation:flash 1s steps(1,end) infinite}
        """

    static let script = """
        (function(){"use strict";
        var body=document.body,head=document.getElementById("headline"),
        list=document.getElementById("details"),line=document.getElementById("status");
        function parse(text){try{return JSON.parse(text)}catch(e){return null}}
        var lost=parse(body.getAttribute("data-lost")),first=parse(body.getAttribute("data-view"))||lost;
        function paint(v){if(!v||typeof v.headline!=="string"){v=lost}
        var s=body.style;s.setProperty("--bg",v.background);s.setProperty("--fg",v.foreground);
        s.setProperty("--bg2",v.flash_background);s.setProperty("--fg2",v.flash_foreground);
        s.setProperty("--chars",String(Math.max(4,v.headline.length)));
        body.setAttribute("data-flag",v.flag);body.classList.toggle("flash",v.flashes===true);
        if(head.textContent!==v.headline){head.textContent=v.headline}
        if(line.textContent!==v.status){line.textContent=v.status}
        var d=Array.isArray(v.details)?v.details:[],items=list.children;
        while(items.length>d.length){list.removeChild(list.lastChild)}
        for(var i=0;i<d.length;i++){var li=items[i];if(!li){li=document.createElement("li");list.appendChild(li)}
        if(li.textContent!==String(d[i])){li.textContent=String(d[i])}}}
        paint(first);
        var source=null,heard=Date.now(),opened=0;
        function open(){if(source){source.close()}opened=Date.now();source=new EventSource("/events");
        source.onmessage=function(e){heard=Date.now();paint(parse(e.data))};
        source.onerror=function(){paint(lost);if(source.readyState===2){setTimeout(function(){
        if(source.readyState===2){open()}},1000)}}}
        setInterval(function(){var now=Date.now();if(now-heard>5000){paint(lost);
        if(now-opened>5000){open()}}},1000);
        open();})();
        """

    /// `sha256-…` of `style` and `script` (base64 of the SHA-256 of their UTF-8 bytes).
    static let styleHash = "sha256-puyEc6lqACNbnSUedx87xv5qmEmgamgMC1BWH1gEGYI="
    static let scriptHash = "sha256-U6KLQsbLpL9U3YVTdE3LZziqEVGnmkp9SEuqqgPzkHk="

    /// The Content-Security-Policy every response carries.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src '\(scriptHash)'; style-src '\(styleHash)'; connect-src 'self'; "
        + "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}
