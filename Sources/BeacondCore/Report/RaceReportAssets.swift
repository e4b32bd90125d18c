/// The report page's inline style and script. Both are constants, never templated: the page's
/// Content-Security-Policy allows exactly these bytes by their SHA-256, computed when the page is
/// written (`RaceReportPage`), and forbids every fetch. The data goes in a
/// `<script type="application/json">` block, which is never run.
///
/// The script draws the chart from the data at the current zoom: stretches narrower than 2 px are
/// merged for drawing into one mark coloured by the most severe mode among them (an evacuation
/// is never drawn narrower than 4 px, and is marked above its row); the table lists every
/// stretch, never merged. Text goes in through `textContent` only.
enum RaceReportAssets {
    static let style = """
        body{font-family:"DejaVu Sans",Arial,sans-serif;margin:16px;color:#111;background:#fff}
        h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}
        .muted{color:#555}.warn{color:#a00;font-weight:bold}
        #summary ul{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:6px 18px}
        .swatch{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;\
        border:1px solid #0004}
        #controls{margin:8px 0;display:flex;gap:8px;align-items:center}
        #chart{position:relative;border:1px solid #ccc;outline:none;user-select:none;cursor:grab}
        #chart:focus{border-color:#06c;box-shadow:0 0 0 2px #06c6}
        #chart svg{display:block}
        .m-normal{fill:#009639;background:#009639}.m-yellow_flag{fill:#ffd600;background:#ffd600}
        .m-vsc{fill:#ff8200;background:#ff8200}.m-safety_car{fill:#ff8200;background:#ff8200}
        .m-red_flag{fill:#d20000;background:#d20000}.m-evacuation{fill:url(#evac);background:#d20000}
        .m-unknown{fill:#5a5a5a;background:#5a5a5a}
        .st{stroke:#fff;stroke-width:.5}.st:focus,.st:hover{stroke:#000;stroke-width:2;outline:none}
        .contested{stroke:#000;stroke-width:1.5;stroke-dasharray:3 2}
        .hatch{fill:url(#hatch);pointer-events:none}.held{fill:url(#held);pointer-events:none}
        .merged{stroke:#000;stroke-width:.5;stroke-opacity:.4}
        .evac-mark{fill:#d20000;stroke:#fff;stroke-width:1}
        .gap{fill:#0002;pointer-events:none}.gap-label{font-size:10px;fill:#333}
        .rowbg{fill:#f4f4f4}.label{font-size:12px;fill:#111}.tick{stroke:#bbb}.ticktext{font-size:10px;fill:#333}
        .short{font-size:10px;pointer-events:none;fill:#000}.short.light{fill:#fff}
        #tip{position:absolute;z-index:2;max-width:420px;background:#fffffe;border:1px solid #333;padding:6px 8px;\
        font-size:12px;white-space:pre-line;box-shadow:2px 2px 6px #0004;pointer-events:none}
        table{border-collapse:collapse;font-size:12px;table-layout:fixed;width:100%}
        th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;overflow-wrap:anywhere}th{background:#eee}
        .c1{width:11%}.c2{width:11%}.c3{width:14%}.c4{width:14%}.c5{width:8%}.c6{width:42%}
        .chunk{content-visibility:auto;contain-intrinsic-size:auto 4000px}.rows{margin-top:-1px}
        @media print{#controls,#tip{display:none}#chart{border:none}}
        """

    static let script = """
        (function(){"use strict";
        var D=JSON.parse(document.getElementById("race-data").textContent);
        var NS="http://www.w3.org/2000/svg",LABEL=150,TOP=24,RH=26,MIN=2;
        var MODES=D.modes,SEV={unknown:-1,normal:0,yellow_flag:1,vsc:2,safety_car:3,red_flag:4,evacuation:5};
        var NAMES={normal:"Green",yellow_flag:"Yellow flag",vsc:"VSC",safety_car:"Safety car",red_flag:"Red flag",
        evacuation:"EVACUATION",unknown:"No signal / unknown"};
        var SHORT={normal:"",yellow_flag:"YELLOW",vsc:"VSC",safety_car:"SC",red_flag:"RED",evacuation:"EVAC",
        unknown:"?"};
        var chart=document.getElementById("chart"),svg=document.getElementById("svg"),
        tip=document.getElementById("tip"),view=document.getElementById("view");
        var fmt=null;try{fmt=new Intl.DateTimeFormat("en-GB",{timeZone:D.tz,year:"numeric",month:"2-digit",
        day:"2-digit",hour:"2-digit",minute:"2-digit",second:"2-digit",hourCycle:"h23"})}catch(e){fmt=null}
        function pad(n,w){n=String(n);while(n.length<w){n="0"+n}return n}
        function parts(ms){var o={};if(fmt){fmt.formatToParts(new Date(ms)).forEach(function(p){o[p.type]=p.value})}
        else{var d=new Date(ms);o={year:d.getUTCFullYear(),month:pad(d.getUTCMonth()+1,2),day:pad(d.getUTCDate(),2),
        hour:pad(d.getUTCHours(),2),minute:pad(d.getUTCMinutes(),2),second:pad(d.getUTCSeconds(),2)}}return o}
        var offsets={};
        function offset(ms){var b=Math.floor(ms/9e5);if(!(b in offsets)){var p=parts(b*9e5);offsets[b]=
        Date.UTC(+p.year,+p.month-1,+p.day,+p.hour,+p.minute,+p.second)-b*9e5}return offsets[b]}
        function wall(us,withDate){var ms=Math.floor(us/1000),d=new Date(ms+offset(ms)),t=pad(d.getUTCHours(),2)+
        ":"+pad(d.getUTCMinutes(),2)+":"+pad(d.getUTCSeconds(),2)+"."+pad(d.getUTCMilliseconds(),3);
        return withDate===false?t:pad(d.getUTCFullYear(),4)+"-"+pad(d.getUTCMonth()+1,2)+"-"+
        pad(d.getUTCDate(),2)+" "+t}
        function dur(us){var s=us/1e6;if(s<1){return (Math.round(s*1000))+" ms"}if(s<60){return s.toFixed(s<10?2:1)+
        " s"}var m=Math.floor(s/60),h=Math.floor(m/60);s=Math.floor(s%60);return h>0?h+" h "+pad(m%60,2)+" min":
        m+" min "+pad(s,2)+" s"}
        var rows=D.rows,byRow=rows.map(function(){return[]});
        D.s.forEach(function(s,i){s.i=i;byRow[s[0]].push(s)});
        function abs(t){return D.base+t}
        function text(s){return[NAMES[MODES[s[1]]]+" \\u2014 "+D.labels[s[0]],wall(abs(s[2]))+" to "+
        wall(abs(s[3]),false)+" ("+dur(s[3]-s[2])+")"].concat(details(s)).join("\\n")}
        function details(s){var r=rows[s[0]],l=[];
        if(r.indexOf("zone")===0){l.push("beacon "+D.addr[s[4]]+(s[14]!==null?" source "+s[14]:"")+", v"+s[13]+
        ", seq "+s[5]+(s[6]!==s[5]?" to "+s[6]:"")+", TTL "+s[7]+" s, RSSI "+(s[8]===null?"n/a":s[8]+" dBm")+
        ((s[9]&1)?", signed":""));if(s[11]>1){l.push(s[11]+" beacons claimed it")}
        if(s[9]&2){l.push("CONTESTED: an older-sequence claim disagreed (possible spoofing)")}
        if(s[10]!==null){l.push("held from "+wall(abs(s[10]),false)+" (de-escalation hold)")}
        l.push("ended: "+D.ends[s[12]])}
        else if(r==="published"){l.push("source: "+["beacon","race control","none"][s[4]]+(s[5]!==null?
        ", zone "+s[5]:"")+(s[6]!==null?", beacon "+D.addr[s[6]]+", seq "+s[7]:"")+(s[8]?", signed":""));
        if(s[9]!==null){l.push("message: "+D.str[s[9]])}}
        else{l.push((s[4]&1)?"fresh":"STALE: no successful fetch within remote.stale_after");
        if(s[4]&2){l.push("evacuation latched")}if(s[5]!==null){l.push("message: "+D.str[s[5]])}
        if(s[6]>0){l.push(s[6]+" failed fetches, last: "+(s[7]!==null?D.str[s[7]]:""))}}
        return l}
        var v0=0,v1=Math.max(D.span,1000);
        function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a){e.setAttribute(k,a[k])}
        if(p){p.appendChild(e)}return e}
        function steps(){return[1e3,2e3,5e3,1e4,2e4,5e4,1e5,2e5,5e5,1e6,2e6,5e6,1e7,15e6,3e7,6e7,12e7,3e8,6e8,9e8,
        18e8,36e8,72e8,108e8,216e8,432e8,864e8]}
        function draw(){var W=Math.max(chart.clientWidth,400),P=W-LABEL-10,sc=P/(v1-v0);
        function X(t){return LABEL+(t-v0)*sc}
        while(svg.lastChild&&svg.lastChild.nodeName!=="defs"){svg.removeChild(svg.lastChild)}
        var H=TOP+rows.length*RH+4;svg.setAttribute("width",W);svg.setAttribute("height",H);
        var st=steps().filter(function(s){return s*sc>=90})[0]||864e8,p0=parts(Math.floor(abs(v0)/1000)),
        off=Date.UTC(+p0.year,+p0.month-1,+p0.day,+p0.hour,+p0.minute,+p0.second)-Math.floor(abs(v0)/1e6)*1000;
        var t=Math.ceil((abs(v0)+off*1000)/st)*st-off*1000-D.base;
        for(;t<=v1;t+=st){var x=X(t);el("line",{x1:x,x2:x,y1:TOP-4,y2:H,"class":"tick"},svg);
        var lab=el("text",{x:x+2,y:TOP-8,"class":"ticktext"},svg);
        lab.textContent=st>=864e8?wall(abs(t)).slice(0,10):wall(abs(t),false).slice(0,st<1e6?12:st<6e7?8:5)}
        D.gaps.forEach(function(g){if(g[1]<v0||g[0]>v1){return}var a=Math.max(X(g[0]),LABEL),
        b=Math.min(X(g[1]),LABEL+P);el("rect",{x:a,y:TOP,width:Math.max(b-a,3),height:rows.length*RH,"class":"gap"},
        svg);if(b-a>60){el("text",{x:a+3,y:H-3,"class":"gap-label"},svg).textContent="no reports"}});
        rows.forEach(function(r,ri){var y=TOP+ri*RH;el("rect",{x:LABEL,y:y+2,width:P,height:RH-4,"class":"rowbg"},svg);
        el("text",{x:4,y:y+RH/2+4,"class":"label"},svg).textContent=D.labels[ri];
        if(!byRow[ri].length){el("text",{x:LABEL+6,y:y+RH/2+4,"class":"ticktext"},svg).textContent=
        "nothing recorded"}
        var list=byRow[ri],lo=0,hi=list.length;while(lo<hi){var mid=(lo+hi)>>1;if(list[mid][3]<=v0){lo=mid+1}
        else{hi=mid}}var g=null;
        function flush(){if(!g){return}var w=g.b-g.a,m=g.worst;if(m==="evacuation"&&w<4){w=4}
        var e=el("rect",{x:g.a,y:y+3,width:Math.max(w,1),height:RH-6,"class":"merged m-"+m,"data-merged":g.n},svg);
        e.appendChild(document.createElementNS(NS,"title")).textContent=g.n+" stretches, most severe "+NAMES[m]+
        ": zoom in";if(m==="evacuation"){mark(g.a,y)}g=null}
        for(var i=lo;i<list.length&&list[i][2]<=v1;i++){var s=list[i],m=MODES[s[1]],
        a=Math.max(X(s[2]),LABEL),b=Math.min(X(s[3]),LABEL+P);if(s[3]===s[2]){continue}
        if(b-a>=MIN){flush();one(s,m,a,b,y,X)}else{if(!g){g={a:a,b:b,worst:m,n:0}}g.b=Math.max(g.b,b);g.n++;
        if(SEV[m]>SEV[g.worst]){g.worst=m}if(g.b-g.a>=MIN){flush()}}}flush()});
        view.textContent="Showing "+wall(abs(v0))+" to "+wall(abs(v1))+" ("+D.tz+")"}
        function mark(x,y){el("polygon",{points:(x-5)+","+(y-1)+" "+(x+5)+","+(y-1)+" "+x+","+(y+6),
        "class":"evac-mark"},svg)}
        function one(s,m,a,b,y,X){var w=b-a;if(m==="evacuation"&&w<4){w=4}
        var c="st m-"+m+((rows[s[0]].indexOf("zone")===0&&(s[9]&2))?" contested":"");
        var e=el("rect",{x:a,y:y+3,width:w,height:RH-6,"class":c,tabindex:"0","data-i":s.i,"data-row":rows[s[0]],
        "data-mode":m,"data-start":abs(s[2]),"data-end":abs(s[3]),"aria-label":text(s)},svg);extra(e,s);
        if(rows[s[0]]==="race_control"&&!(s[4]&1)){el("rect",{x:a,y:y+3,width:w,height:RH-6,"class":"hatch"},svg)}
        if(rows[s[0]].indexOf("zone")===0&&s[10]!==null){var h=Math.max(X(s[10]),a);el("rect",{x:h,y:y+3,
        width:Math.max(b-h,0),height:RH-6,"class":"held"},svg)}
        if(m==="evacuation"){mark(a,y)}
        if(w>34){var k=el("text",{x:a+3,y:y+RH/2+4,"class":"short"+(m==="red_flag"||m==="normal"||
        m==="unknown"||m==="evacuation"?" light":"")},svg);k.textContent=SHORT[m]}return e}
        function extra(e,s){var r=rows[s[0]];if(r.indexOf("zone")===0){e.setAttribute("data-ended",D.endIds[s[12]]);
        if(s[9]&2){e.setAttribute("data-contested","true")}if(s[10]!==null){e.setAttribute("data-held-from",
        abs(s[10]))}}else if(r==="race_control"&&!(s[4]&1)){e.setAttribute("data-stale","true")}}
        function show(e){var i=e.getAttribute("data-i");if(i===null){return}tip.textContent=text(D.s[+i]);
        tip.hidden=false;var r=chart.getBoundingClientRect(),q=e.getBoundingClientRect();
        tip.style.left=Math.min(Math.max(q.left-r.left,0),Math.max(r.width-430,0))+"px";
        tip.style.top=(q.bottom-r.top+4)+"px"}
        function hide(){tip.hidden=true}
        svg.addEventListener("mouseover",function(e){show(e.target)});svg.addEventListener("mouseout",hide);
        svg.addEventListener("focusin",function(e){show(e.target)});svg.addEventListener("focusout",hide);
        function clamp(){var w=v1-v0,span=Math.max(D.span,1000);if(w>span){v0=0;v1=span;return}
        if(v0<0){v1-=v0;v0=0}if(v1>span){v0-=v1-span;v1=span}}
        function zoom(f,at){var w=v1-v0,n=Math.max(w*f,1000);v0=at-(at-v0)*n/w;v1=v0+n;clamp();draw()}
        function pan(f){var d=(v1-v0)*f;v0+=d;v1+=d;clamp();draw()}
        function fit(){v0=0;v1=Math.max(D.span,1000);draw()}
        function at(cx){var r=svg.getBoundingClientRect(),P=r.width-LABEL-10;return v0+(cx-r.left-LABEL)/P*(v1-v0)}
        chart.addEventListener("wheel",function(e){e.preventDefault();zoom(e.deltaY<0?0.8:1.25,at(e.clientX))},
        {passive:false});
        var drag=null;chart.addEventListener("mousedown",function(e){drag={x:e.clientX,v0:v0,v1:v1}});
        window.addEventListener("mouseup",function(){drag=null});
        window.addEventListener("mousemove",function(e){if(!drag){return}var P=svg.getBoundingClientRect().width-
        LABEL-10,d=(e.clientX-drag.x)/P*(drag.v1-drag.v0);v0=drag.v0-d;v1=drag.v1-d;clamp();draw()});
        chart.addEventListener("keydown",function(e){var k=e.key,c=(v0+v1)/2;if(k==="+"||k==="="){zoom(0.5,c)}
        else if(k==="-"||k==="_"){zoom(2,c)}else if(k==="ArrowLeft"){pan(-0.1)}else if(k==="ArrowRight"){pan(0.1)}
        else if(k==="0"||k==="Home"){fit()}else{return}e.preventDefault()});
        document.getElementById("zin").addEventListener("click",function(){zoom(0.5,(v0+v1)/2)});
        document.getElementById("zout").addEventListener("click",function(){zoom(2,(v0+v1)/2)});
        document.getElementById("fit").addEventListener("click",fit);
        window.addEventListener("resize",draw);
        document.getElementById("range").textContent=wall(D.base)+" to "+wall(abs(D.span))+" ("+D.tz+
        ", from the capture's clock)";
        var ev=document.getElementById("evacs");D.s.filter(function(s){return MODES[s[1]]==="evacuation"})
        .forEach(function(s){var li=document.createElement("li");li.textContent=D.labels[s[0]]+": "+wall(abs(s[2]))+
        " for "+dur(s[3]-s[2]);ev.appendChild(li)});
        var gl=document.getElementById("gaps");D.gaps.forEach(function(g){var li=document.createElement("li");
        li.textContent=wall(abs(g[0]))+" to "+wall(abs(g[1]),false)+" ("+dur(g[1]-g[0])+")";gl.appendChild(li)});
        var list=document.getElementById("stretches"),frag=document.createDocumentFragment(),body=null;
        function chunk(){var div=document.createElement("div"),table=document.createElement("table");
        div.className="chunk";table.className="rows";table.appendChild(document.getElementById("cols").cloneNode(true))
        .removeAttribute("id");body=document.createElement("tbody");table.appendChild(body);div.appendChild(table);
        frag.appendChild(div)}
        D.s.forEach(function(s,i){if(i%200===0){chunk()}var tr=document.createElement("tr"),m=MODES[s[1]];
        tr.setAttribute("data-row",rows[s[0]]);tr.setAttribute("data-mode",m);tr.setAttribute("data-start",abs(s[2]));
        tr.setAttribute("data-end",abs(s[3]));extra(tr,s);
        [D.labels[s[0]],NAMES[m],wall(abs(s[2])),wall(abs(s[3])),dur(s[3]-s[2]),details(s).join("; ")]
        .forEach(function(v,ci){var td=document.createElement("td");if(ci===1){var w=document.createElement("span");
        w.className="swatch m-"+m;td.appendChild(w)}td.appendChild(document.createTextNode(v));tr.appendChild(td)});
        body.appendChild(tr)});list.appendChild(frag);
        draw();document.body.setAttribute("data-ready","1");
        document.body.setAttribute("data-ready-ms",String(Math.round(performance.now())))})();
        """
}
